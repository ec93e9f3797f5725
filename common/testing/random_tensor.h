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

// The bytes a tensor (any device, any dtype) holds, in storage order: for comparisons bit for
// bit, NaN included.
std::vector<unsigned char> stored_bytes(const Tensor& t);

// Reference values computed in double, rounded to `dtype` as a kernel's stores round them.
std::vector<float> rounded(const std::vector<double>& values, DType dtype);

// (batch, seq) i32 tokens uniform over [0, vocabulary), on the CPU.
Tensor random_tokens(int64_t batch, int64_t seq, int64_t vocabulary, uint32_t seed);

}  // namespace course::testing
