// Random test tensors.
#include "common/testing/random_tensor.h"

#include <cstring>
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

std::vector<unsigned char> stored_bytes(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::vector<unsigned char> bytes(host.nbytes());
  std::memcpy(bytes.data(), host.data(), bytes.size());
  return bytes;
}

std::vector<float> rounded(const std::vector<double>& values, DType dtype) {
  std::vector<float> f(values.begin(), values.end());
  return to_floats(cast(Tensor::from_vector(f, {static_cast<int64_t>(f.size())}), dtype));
}

Tensor random_tokens(int64_t batch, int64_t seq, int64_t vocabulary, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(vocabulary - 1));
  std::vector<int32_t> ids(batch * seq);
  for (int32_t& id : ids) id = any(rng);
  return Tensor::from_vector(ids, {batch, seq});
}

}  // namespace course::testing
