// Random test tensors.
#include "common/testing/random_tensor.h"

#include <random>

#include "common/kernels/elementwise.h"

namespace course::testing {

TestTensor random_tensor(const Shape& shape, DType dtype, Device device, uint32_t seed, float lo,
                         float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::vector<float> values(numel_of(shape));
  for (float& v : values) v = uniform(rng);
  Tensor rounded = cast(Tensor::from_vector(values, shape), dtype);
  return {rounded.to(device), to_floats(rounded)};
}

std::vector<float> to_floats(const Tensor& t) {
  return cast(t.to(Device::cpu()), DType::kF32).to_vector<float>();
}

}  // namespace course::testing
