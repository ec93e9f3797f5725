// Geometric and colour augmentation of a whole batch on the training device: the day-3 lab's
// alternative to the same operations in the loader's workers (common/data/augment_ops.h). The
// draws are made on the host (common/data/batch_augment.h); these kernels apply them.
#pragma once

#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// images (N, C, H, W), C <= 3, of any floating dtype and memory format, normalised with the
// per-channel `mean` and `std`; geometry (N, 3) i32 (flip, dx, dy) and factors (N, 2) f32
// (brightness, contrast) on the images' device. Returns the batch in the same dtype and format:
// sample i flipped (when asked), then moved by (dx, dy) with black filling in, its [0, 1]
// pixels p scaled to clamp(b p), then to clamp(c p + (1 - c) grey_i) with grey_i the mean grey
// level of the scaled image, normalised again.
Tensor augment_batch_on_device(const Tensor& images, const Tensor& geometry, const Tensor& factors,
                               const std::vector<float>& mean, const std::vector<float>& std);

}  // namespace course
