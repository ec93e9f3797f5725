// The crop-resize-normalise kernel's body (CPU and GPU run this code): one index per output
// element, numbered in the output's memory order (NCHW or channels-last), so a GPU warp's
// writes are contiguous; the reads gather from the box. Source coordinates follow OpenCV's
// INTER_LINEAR: x_src = (x + 0.5) * box_w / size - 0.5, clamped to the box's first and last
// pixel with the weight of the outer one 0.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr int kMaxCropChannels = 3;

// One axis of the resize: the first source pixel and the weight of the next one.
struct Tap {
  int64_t first;
  float next_weight;
};

COURSE_HD inline Tap resize_tap(int64_t out, int64_t out_size, int64_t box_start,
                                int64_t box_size) {
  const float scale = static_cast<float>(box_size) / static_cast<float>(out_size);
  const float source = (static_cast<float>(out) + 0.5f) * scale - 0.5f;
  int64_t first = static_cast<int64_t>(source >= 0.0f ? source : source - 1.0f);  // floor
  float weight = source - static_cast<float>(first);
  if (first < 0) {
    first = 0;
    weight = 0.0f;
  }
  if (first >= box_size - 1) {
    first = box_size - 1;
    weight = 0.0f;
  }
  return {box_start + first, weight};
}

template <class T>
struct CropResizeElements {
  const uint8_t* pixels;
  const int64_t* images;  // (N, 3): offset, height, width
  const int32_t* crops;   // (N, 5): x, y, width, height, flip
  T* out;                 // dense, in channels-last order when `channels_last`
  bool channels_last;
  int64_t channels, size;
  float scale[kMaxCropChannels], shift[kMaxCropChannels];  // p * scale + shift normalises

  COURSE_HD void operator()(int64_t index) const {
    int64_t i, c, y, x;
    if (channels_last) {
      c = index % channels;
      x = index / channels % size;
      y = index / (channels * size) % size;
      i = index / (channels * size * size);
    } else {
      x = index % size;
      y = index / size % size;
      c = index / (size * size) % channels;
      i = index / (size * size * channels);
    }
    const int64_t* image = images + 3 * i;
    const int32_t* box = crops + 5 * i;
    const int64_t width = image[2];
    const uint8_t* base = pixels + image[0] + c;
    const Tap row = resize_tap(y, size, box[1], box[3]);
    const Tap col = resize_tap(box[4] ? size - 1 - x : x, size, box[0], box[2]);
    const int64_t next_row = row.next_weight > 0.0f ? row.first + 1 : row.first;
    const int64_t next_col = col.next_weight > 0.0f ? col.first + 1 : col.first;
    const auto at = [&](int64_t r, int64_t k) {
      return static_cast<float>(base[(r * width + k) * channels]);
    };
    const float upper = at(row.first, col.first) * (1.0f - col.next_weight) +
                        at(row.first, next_col) * col.next_weight;
    const float lower = at(next_row, col.first) * (1.0f - col.next_weight) +
                        at(next_row, next_col) * col.next_weight;
    const float level =
        static_cast<float>(static_cast<int>(upper + (lower - upper) * row.next_weight + 0.5f));
    out[index] = T(level * scale[c] + shift[c]);
  }
};

}  // namespace course::ops
