// The jitter of jitter.h applied to a whole normalised batch on the training device: the draws
// are made here on the host, one per sample, and one pair of device kernels
// (common/kernels/batch_augment.h) applies them.
#pragma once

#include <random>
#include <vector>

#include "common/data/jitter.h"
#include "common/tensor/tensor.h"

namespace course {

// images (N, C, H, W) normalised with `mean` and `std` per channel; draws, one per sample.
Tensor jitter_batch(const Tensor& images, const std::vector<JitterDraw>& draws,
                    const std::vector<float>& mean, const std::vector<float>& std);

// With fresh draws from `rng` (the flip with probability 1/2).
Tensor jitter_batch(const Tensor& images, const JitterOptions& options,
                    const std::vector<float>& mean, const std::vector<float>& std,
                    std::mt19937& rng);

}  // namespace course
