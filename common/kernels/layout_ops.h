// Per-element bodies of memory-format conversion (NCHW <-> NHWC), shared by CPU and GPU.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/index4.h"

namespace course::ops {

// For each physical index i of the output (dense in `out` order), copies the element with the
// same logical (n, c, h, w) from the input. Word is an unsigned type of the element's size,
// so one instantiation per element size serves every dtype.
template <class Word>
struct Relayout {
  const Word* in;
  Word* out;
  int64_t channels, height, width;
  Strides4 in_strides;
  bool out_channels_last;

  COURSE_HD void operator()(int64_t i) const {
    int64_t n, c, h, w;
    if (out_channels_last) {  // i = ((n * H + h) * W + w) * C + c
      c = i % channels;
      w = (i / channels) % width;
      h = (i / (channels * width)) % height;
      n = i / (channels * width * height);
    } else {  // i = ((n * C + c) * H + h) * W + w
      w = i % width;
      h = (i / width) % height;
      c = (i / (width * height)) % channels;
      n = i / (width * height * channels);
    }
    out[i] = in[in_strides.at(n, c, h, w)];
  }
};

// For each index i of a contiguous (N, C, H, W) f32 output: out[i] += the element of the same
// logical (n, c, h, w) of `in` (any floating type, either format). A convolution's weight
// gradient, computed in 16 bits in the convolution's layout, joins its f32 master gradient in
// this one pass (no relayout, cast and add apart).
template <class T>
struct AccumulateRelaid {
  const T* in;
  float* out;
  int64_t channels, height, width;
  Strides4 in_strides;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t w = i % width, h = (i / width) % height;
    const int64_t c = (i / (width * height)) % channels, n = i / (width * height * channels);
    out[i] += static_cast<float>(in[in_strides.at(n, c, h, w)]);
  }
};

}  // namespace course::ops
