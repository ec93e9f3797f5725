// Per-element and per-chunk bodies of 1-bit compression with error feedback (Tang et al. 2021),
// shared by the CPU and the GPU: a chunk of values plus the error carried from the last step
// becomes one scale (the chunk's mean |value|) and one sign bit per element (set for >= 0), and
// the error keeps what that lost. Eight elements share a byte, element k of a byte in bit k.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Row r = chunk r of `chunk` elements (a multiple of 8) of x: v = x + error; scales[r] = mean |v|
// over the chunk's elements below `valid`; bits = v >= 0; error = v - scale sign. Elements at and
// past `valid` are padding: not counted, their error kept at 0.
struct CompressSigns {
  const float* x;
  float* error;
  uint8_t* bits;
  float* scales;
  int64_t chunk, valid;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t begin = row * chunk;
    const int64_t count = valid - begin < chunk ? (valid > begin ? valid - begin : 0) : chunk;
    const float total =
        lanes.sum(count, [&](int64_t j) { return fabsf(x[begin + j] + error[begin + j]); });
    const float scale = count > 0 ? total / static_cast<float>(count) : 0.0f;
    if (lanes.first()) scales[row] = scale;
    lanes.for_each(chunk / 8, [&](int64_t b) {
      unsigned byte = 0;
      for (int k = 0; k < 8; ++k) {
        const int64_t i = begin + 8 * b + k;
        if (i >= valid) {
          byte |= 1u << k;
          continue;
        }
        const float v = x[i] + error[i];
        const bool positive = v >= 0.0f;
        byte |= static_cast<unsigned>(positive) << k;
        error[i] = v - (positive ? scale : -scale);
      }
      bits[begin / 8 + b] = static_cast<uint8_t>(byte);
    });
  }
};

COURSE_HD inline float signed_scale(const uint8_t* bits, int64_t i, float scale) {
  return (bits[i / 8] >> (i % 8)) & 1u ? scale : -scale;
}

// out[i] = the mean over `ranks` compressed copies of one chunk (rank r's signs at
// bits[r chunk / 8 ...], its scale scales[r]), for i in [0, chunk).
struct AverageSigns {
  const uint8_t* bits;
  const float* scales;
  float* out;
  int64_t chunk;
  int ranks;

  COURSE_HD void operator()(int64_t i) const {
    float sum = 0.0f;
    for (int r = 0; r < ranks; ++r) sum += signed_scale(bits + r * (chunk / 8), i, scales[r]);
    out[i] = sum / static_cast<float>(ranks);
  }
};

// out[i] = scales[i / chunk] times the sign of element i: the values a compression stands for.
struct ExpandSigns {
  const uint8_t* bits;
  const float* scales;
  float* out;
  int64_t chunk;

  COURSE_HD void operator()(int64_t i) const { out[i] = signed_scale(bits, i, scales[i / chunk]); }
};

}  // namespace course::ops
