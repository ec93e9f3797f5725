// Random test tensors whose exact element values are known as floats, for naive references.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::testing {

struct TestTensor {
  Tensor tensor;              // on the requested device and dtype
  std::vector<float> values;  // its elements, exactly as stored (after rounding to the dtype)
};

// Uniform values in [lo, hi), rounded to `dtype`, in a contiguous tensor on `device`.
TestTensor random_tensor(const Shape& shape, DType dtype, Device device, uint32_t seed,
                         float lo = -1.0f, float hi = 1.0f);

// The elements of any floating tensor (any device, contiguous) as floats on the host.
std::vector<float> to_floats(const Tensor& t);

}  // namespace course::testing
