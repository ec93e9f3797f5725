// Parameter initialisation, seeded so that every run (and every rank) starts from the same
// weights: Kaiming-normal for convolutions (ReLU gain), PyTorch's default uniform for linear,
// GPT-2's Normal(0, 0.02) for transformers.
#pragma once

#include <cstdint>
#include <random>

#include "common/tensor/tensor.h"

namespace course::nn {

// Normal(0, sqrt(2 / fan_in)) values of `shape`, on `device`.
Tensor kaiming_normal(const Shape& shape, int64_t fan_in, std::mt19937& rng, Device device);
// Uniform(-bound, bound) values of `shape`, on `device`.
Tensor uniform(const Shape& shape, float bound, std::mt19937& rng, Device device);
// Normal(0, std) values of `shape`, on `device`.
Tensor normal(const Shape& shape, float std, std::mt19937& rng, Device device);

// While one lives on this thread, the initialisers above return zeros and leave the generator
// as it was: a model built only for its shapes and its forward's allocations (the memory
// estimate's pieces, common/parallel/planning/piece_measurement.h), as PyTorch's skip_init,
// without drawing the billions of values of a model that is never trained. Scopes nest.
class SkippedInit {
 public:
  SkippedInit();
  ~SkippedInit();
  SkippedInit(const SkippedInit&) = delete;
  SkippedInit& operator=(const SkippedInit&) = delete;
};

}  // namespace course::nn
