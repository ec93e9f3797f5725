// 1-bit compression with error feedback (Tang et al. 2021): a chunk of values plus the error
// carried from the last step becomes one scale (the chunk's mean |value|) and one sign bit per
// element (set for >= 0), and the error keeps what that lost. Eight elements share a byte,
// element k of a byte in bit k. The bodies (one for the CPU and the GPU), their argument checks
// and dispatch, and their GPU instantiations.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/sign_compression.h"

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

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

// bits (n / 8,) u8 and scales (n / chunk,) f32 on `device` describe n values in chunks.
void check_compressed(const Tensor& bits, const Tensor& scales, int64_t n, int64_t chunk,
                      Device device, const char* name) {
  COURSE_CHECK(chunk > 0 && chunk % 8 == 0 && n % chunk == 0, name, ": chunks of ", chunk,
               " elements must be a positive multiple of 8 dividing ", n);
  COURSE_CHECK(bits.dtype() == DType::kU8 && bits.numel() == n / 8 && bits.device() == device, name,
               ": the signs must be (", n / 8, ",) u8 on ", device.str(), ", got ", bits.str());
  COURSE_CHECK(
      scales.dtype() == DType::kF32 && scales.numel() == n / chunk && scales.device() == device,
      name, ": the scales must be (", n / chunk, ",) f32 on ", device.str(), ", got ",
      scales.str());
}

}  // namespace

void compress_signs_(const Tensor& x, Tensor& error, Tensor& bits, Tensor& scales, int64_t chunk,
                     int64_t valid) {
  COURSE_CHECK(x.dtype() == DType::kF32 && error.dtype() == DType::kF32 &&
                   error.numel() == x.numel() && error.device() == x.device(),
               "compress_signs_: x and its error must be f32 of one size on one device, got ",
               x.str(), " and ", error.str());
  check_compressed(bits, scales, x.numel(), chunk, x.device(), "compress_signs_");
  COURSE_CHECK(valid >= 0 && valid <= x.numel(), "compress_signs_: ", valid, " valid elements of ",
               x.numel());
  const int64_t chunks = x.numel() / chunk;
  const int64_t pieces = (chunk + ops::kSignPiece - 1) / ops::kSignPiece;
  Tensor partial = Tensor::empty({chunks * pieces}, DType::kF32, x.device());
  for_each_row(x.device(), chunks * pieces, std::min(chunk, ops::kSignPiece),
               ops::PieceMagnitudes{x.data_as<float>(), error.data_as<float>(),
                                    partial.data_as<float>(), chunk, pieces, valid});
  for_each_row(
      x.device(), chunks, pieces,
      ops::ChunkScales{partial.data_as<float>(), scales.data_as<float>(), chunk, pieces, valid});
  for_each_index(x.device(), x.numel() / 8,
                 ops::SignBytes{x.data_as<float>(), error.data_as<float>(), bits.data_as<uint8_t>(),
                                scales.data_as<float>(), chunk, valid},
                 8);
}

void average_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk) {
  COURSE_CHECK(out.dtype() == DType::kF32 && out.numel() == chunk, "average_signs: out must be (",
               chunk, ",) f32, got ", out.str());
  check_compressed(bits, scales, scales.numel() * chunk, chunk, out.device(), "average_signs");
  for_each_index(out.device(), chunk,
                 ops::AverageSigns{bits.data_as<uint8_t>(), scales.data_as<float>(),
                                   out.data_as<float>(), chunk, static_cast<int>(scales.numel())},
                 scales.numel());
}

void expand_signs(const Tensor& bits, const Tensor& scales, Tensor& out, int64_t chunk) {
  COURSE_CHECK(out.dtype() == DType::kF32, "expand_signs: out must be f32, got ", out.str());
  check_compressed(bits, scales, out.numel(), chunk, out.device(), "expand_signs");
  for_each_index(out.device(), out.numel(),
                 ops::ExpandSigns{bits.data_as<uint8_t>(), scales.data_as<float>(),
                                  out.data_as<float>(), chunk});
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::PieceMagnitudes)
COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::ChunkScales)
COURSE_INSTANTIATE_FOR_EACH(course::ops::SignBytes)
COURSE_INSTANTIATE_FOR_EACH(course::ops::AverageSigns)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ExpandSigns)

}  // namespace course
