// The crop-resize-normalise kernel's body (CPU and GPU run this code): one index per output
// row (sample, channel, row), its columns in a loop. Source coordinates follow OpenCV's
// INTER_LINEAR: x_src = (x + 0.5) * box_w / size - 0.5, clamped to the box's first and last
// pixel with the weight of the outer one 0.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

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
struct CropResizeRows {
  const uint8_t* pixels;
  const int64_t* images;  // (N, 3): offset, height, width
  const int32_t* crops;   // (N, 5): x, y, width, height, flip
  T* out;
  Strides4 strides;  // of out
  int64_t channels, size;
  float scale[kMaxCropChannels], shift[kMaxCropChannels];  // p * scale + shift normalises

  COURSE_HD void operator()(int64_t row_index) const {
    const int64_t y = row_index % size;
    const int64_t c = row_index / size % channels;
    const int64_t i = row_index / (size * channels);
    const int64_t* image = images + 3 * i;
    const int32_t* box = crops + 5 * i;
    const int64_t width = image[2];
    const uint8_t* base = pixels + image[0];
    const Tap row = resize_tap(y, size, box[1], box[3]);
    const int64_t next_row = row.next_weight > 0.0f ? row.first + 1 : row.first;
    const uint8_t* top = base + row.first * width * channels + c;
    const uint8_t* bottom = base + next_row * width * channels + c;
    for (int64_t x = 0; x < size; ++x) {
      const Tap col = resize_tap(box[4] ? size - 1 - x : x, size, box[0], box[2]);
      const int64_t next_col = col.next_weight > 0.0f ? col.first + 1 : col.first;
      const float upper = static_cast<float>(top[col.first * channels]) * (1.0f - col.next_weight) +
                          static_cast<float>(top[next_col * channels]) * col.next_weight;
      const float lower =
          static_cast<float>(bottom[col.first * channels]) * (1.0f - col.next_weight) +
          static_cast<float>(bottom[next_col * channels]) * col.next_weight;
      const float level =
          static_cast<float>(static_cast<int>(upper + (lower - upper) * row.next_weight + 0.5f));
      out[strides.at(i, c, y, x)] = T(level * scale[c] + shift[c]);
    }
  }
};

}  // namespace course::ops
