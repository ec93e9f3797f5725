// RandomResizedCrop, flip, normalisation and layout in one kernel, on decoded images of
// different sizes already on the training device: the device half of day 3's GPU data path
// (common/data/device_decode.h decodes the JPEGs; the crop boxes and flips are drawn on the host
// exactly as the loader's workers draw them). Matches OpenCV's INTER_LINEAR resize of the crop
// (half-pixel centres, edges replicated inside the box) up to its fixed-point rounding: one
// level of 255 at most.
#pragma once

#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// pixels: every image's (H, W, C) u8 bytes one after another; images: (N, 3) i64 per image its
// offset in `pixels`, height and width; crops: (N, 5) i32 per image the box (x, y, width,
// height) inside it and whether to flip the result horizontally. All on one device; the boxes
// must lie inside their images (common/data/device_decode.cc draws them so).
// Returns (N, C, size, size) of `dtype` (a floating type) in `format`: each box resized to
// size x size, flipped when asked, rounded to whole levels as a u8 image would be, and
// normalised per channel as (p / 255 - mean) / std.
Tensor crop_resize_normalize(const Tensor& pixels, const Tensor& images, const Tensor& crops,
                             int64_t channels, int64_t size, const std::vector<float>& mean,
                             const std::vector<float>& std, DType dtype, MemoryFormat format);

}  // namespace course
