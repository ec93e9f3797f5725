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

}  // namespace course::nn
