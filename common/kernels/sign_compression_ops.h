// Per-element and per-chunk bodies of 1-bit compression with error feedback (Tang et al. 2021),
// shared by the CPU and the GPU: a chunk of values plus the error carried from the last step
// becomes one scale (the chunk's mean |value|) and one sign bit per element (set for >= 0), and
// the error keeps what that lost. Eight elements share a byte, element k of a byte in bit k.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Elements per piece: a chunk (a rank's share of a buffer, millions of elements) is summed in
// pieces of this many, a row each, so every warp of a GPU (every thread of the CPU) has work.
inline constexpr int64_t kSignPiece = 4096;

// Row r = piece r % pieces of chunk r / pieces: partial[r] = the sum of |x + error| over the
// piece's elements below `valid` (the rest is padding).
struct PieceMagnitudes {
  const float* x;
  const float* error;
  float* partial;
  int64_t chunk, pieces, valid;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t chunk_begin = (row / pieces) * chunk;
    const int64_t begin = chunk_begin + (row % pieces) * kSignPiece;
    int64_t end =
        begin + kSignPiece < chunk_begin + chunk ? begin + kSignPiece : chunk_begin + chunk;
    end = end < valid ? end : valid;
    const int64_t count = end > begin ? end - begin : 0;
    const float total =
        lanes.sum(count, [&](int64_t j) { return fabsf(x[begin + j] + error[begin + j]); });
    if (lanes.first()) partial[row] = total;
  }
};

// Row c = chunk c: scales[c] = its pieces' partial sums, added in order, over its elements below
// `valid` (0 for a chunk of padding alone).
struct ChunkScales {
  const float* partial;
  float* scales;
  int64_t chunk, pieces, valid;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const float total = lanes.sum(pieces, [&](int64_t j) { return partial[row * pieces + j]; });
    const int64_t left = valid - row * chunk;
    const int64_t count = left < chunk ? (left > 0 ? left : 0) : chunk;
    if (lanes.first()) scales[row] = count > 0 ? total / static_cast<float>(count) : 0.0f;
  }
};

// Byte b: the sign bits of elements 8 b .. 8 b + 7 (set for x + error >= 0) and their errors,
// x + error - the chunk's scale with that sign. Elements at and past `valid` are padding: their
// bits set, their error kept 0.
struct SignBytes {
  const float* x;
  float* error;
  uint8_t* bits;
  const float* scales;
  int64_t chunk, valid;

  COURSE_HD void operator()(int64_t b) const {
    unsigned byte = 0;
    for (int k = 0; k < 8; ++k) {
      const int64_t i = 8 * b + k;
      if (i >= valid) {
        byte |= 1u << k;
        continue;
      }
      const float scale = scales[i / chunk];
      const float v = x[i] + error[i];
      const bool positive = v >= 0.0f;
      byte |= static_cast<unsigned>(positive) << k;
      error[i] = v - (positive ? scale : -scale);
    }
    bits[b] = static_cast<uint8_t>(byte);
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
