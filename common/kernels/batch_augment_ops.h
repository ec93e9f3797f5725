// Flip, translation, brightness and contrast of a normalised image batch, per sample, on the
// training device (CPU and GPU run this code). Pixels are taken back to [0, 1] with the
// channel's mean and deviation, moved (the uncovered area is black), scaled by the brightness
// factor and clamped, blended with the sample's mean grey level by the contrast factor and
// clamped, and normalised again. The mean grey level (0.299 R + 0.587 G + 0.114 B, or the one
// channel) of the brightened image comes from a first kernel, one sample per index.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

namespace course::ops {

inline constexpr int kMaxAugmentChannels = 3;

// Per sample: flip, dx, dy (i32) and brightness, contrast (f32).
struct SampleMoves {
  const int32_t* geometry;  // (N, 3)
  const float* factors;     // (N, 2)
  float mean[kMaxAugmentChannels], std[kMaxAugmentChannels];
  int64_t channels, height, width;

  // Sample i's brightened pixel (channel c, row y, column x) in [0, 1], read from `x`.
  template <class T>
  COURSE_HD float brightened(const T* x, const Strides4& s, int64_t i, int64_t c, int64_t y,
                             int64_t col) const {
    const int32_t* g = geometry + 3 * i;
    const int64_t moved_x = col - g[1], source_y = y - g[2];  // the flipped image, moved
    if (moved_x < 0 || moved_x >= width || source_y < 0 || source_y >= height) return 0.0f;
    const int64_t source_x = g[0] ? width - 1 - moved_x : moved_x;
    const float raw = static_cast<float>(x[s.at(i, c, source_y, source_x)]) * std[c] + mean[c];
    const float lit = raw * factors[2 * i];
    return lit < 0.0f ? 0.0f : (lit > 1.0f ? 1.0f : lit);
  }
};

template <class T>
struct MeanGrey {
  const T* x;
  Strides4 strides;
  SampleMoves moves;
  float* grey;  // (N,)

  COURSE_HD void operator()(int64_t i) const {
    const float weights[3] = {0.299f, 0.587f, 0.114f};
    float total = 0.0f;
    for (int64_t y = 0; y < moves.height; ++y) {
      for (int64_t col = 0; col < moves.width; ++col) {
        if (moves.channels == 1) {
          total += moves.brightened(x, strides, i, 0, y, col);
          continue;
        }
        for (int64_t c = 0; c < 3; ++c) {
          total += weights[c] * moves.brightened(x, strides, i, c, y, col);
        }
      }
    }
    grey[i] = total / static_cast<float>(moves.height * moves.width);
  }
};

// One index per image row (sample, channel, row), the columns in a loop: the index arithmetic
// (integer divisions) is paid per row, not per pixel.
template <class T>
struct AugmentPixels {
  const T* x;
  T* out;
  Strides4 strides;  // of both x and out
  SampleMoves moves;
  const float* grey;  // (N,)

  COURSE_HD void operator()(int64_t row_index) const {
    const int64_t y = row_index % moves.height;
    const int64_t c = row_index / moves.height % moves.channels;
    const int64_t i = row_index / (moves.height * moves.channels);
    const float contrast = moves.factors[2 * i + 1];
    const float offset = (1.0f - contrast) * grey[i];
    const float mean = moves.mean[c], inverse_std = 1.0f / moves.std[c];
    for (int64_t col = 0; col < moves.width; ++col) {
      float p = contrast * moves.brightened(x, strides, i, c, y, col) + offset;
      p = p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p);
      out[strides.at(i, c, y, col)] = T((p - mean) * inverse_std);
    }
  }
};

}  // namespace course::ops
