// Seeded parameter initialisation (drawn on the host, then copied to the device).
#include "common/nn/init.h"

#include <cmath>
#include <vector>

#include "common/kernels/elementwise.h"

namespace course::nn {

namespace {

thread_local int skipped_init_scopes = 0;

template <class Distribution>
Tensor draw(const Shape& shape, Distribution distribution, std::mt19937& rng, Device device) {
  if (skipped_init_scopes > 0) return zeros(shape, DType::kF32, device);
  std::vector<float> values(numel_of(shape));
  for (float& v : values) v = distribution(rng);
  return Tensor::from_vector(values, shape, device);
}

}  // namespace

Tensor kaiming_normal(const Shape& shape, int64_t fan_in, std::mt19937& rng, Device device) {
  return draw(shape, std::normal_distribution<float>(0.0f, std::sqrt(2.0f / fan_in)), rng, device);
}

Tensor uniform(const Shape& shape, float bound, std::mt19937& rng, Device device) {
  return draw(shape, std::uniform_real_distribution<float>(-bound, bound), rng, device);
}

Tensor normal(const Shape& shape, float std, std::mt19937& rng, Device device) {
  return draw(shape, std::normal_distribution<float>(0.0f, std), rng, device);
}

SkippedInit::SkippedInit() { ++skipped_init_scopes; }
SkippedInit::~SkippedInit() { --skipped_init_scopes; }

}  // namespace course::nn
