// The kernels' tests parametrised by device and memory format, with activations made in the
// case's layout on the case's device (batch norm's and pooling's tests).
#pragma once

#include <utility>
#include <vector>

#include "common/kernels/layout.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course::testing {

class LayoutCaseTest : public DeviceCaseTest<MemoryFormat> {
 protected:
  MemoryFormat format() const { return value<0>(); }
  // A random (N, C, H, W) tensor in this case's layout on this case's device, and its values in
  // NCHW order.
  std::pair<Tensor, std::vector<float>> activations(const Shape& shape, uint32_t seed) const {
    const TestTensor t = random_tensor(shape, DType::kF32, Device::cpu(), seed, -3, 5);
    return {to_memory_format(t.tensor, format()).to(device()), t.values};
  }
  std::vector<float> nchw_values(const Tensor& t) const {
    return to_floats(to_memory_format(t.to(Device::cpu()), MemoryFormat::kContiguous));
  }
};

}  // namespace course::testing
