// 1-bit compression with error feedback, DeepSpeed's (Tang et al. 2021): a segment of values
// plus the error carried from the last call becomes one scale (its root mean square) and one
// sign bit per element (set unless the value is negative, as DeepSpeed's sign().add_(1).bool()),
// and the error keeps what that lost. Eight elements share a byte, element k of a byte in bit k.
// The bodies (one for the CPU and the GPU), their argument checks and dispatch, and their GPU
// instantiations.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/sign_compression.h"

namespace course::ops {

// Elements per piece: a segment (a parameter tensor, millions of elements) is summed in pieces
// of at most this many, a row each, so every warp of a GPU (every thread of the CPU) has work.
inline constexpr int64_t kSignPiece = 4096;

// The segment holding element i: the last t with offsets[t] <= i (a binary search).
COURSE_HD inline int64_t segment_at(const int64_t* offsets, int64_t segments, int64_t i) {
  int64_t low = 0, high = segments - 1;
  while (low < high) {
    const int64_t mid = (low + high + 1) / 2;
    if (offsets[mid] <= i) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return low;
}

// Where element i of segment t lies in the rank-major order of `ranks` chunks per segment:
// chunk r's block, then the segment's place in the block, then i's place in its chunk.
COURSE_HD inline int64_t rank_major_position(const int64_t* offsets, int64_t t, int64_t i,
                                             int ranks, int64_t numel) {
  const int64_t chunk = (offsets[t + 1] - offsets[t]) / ranks, within = i - offsets[t];
  return (within / chunk) * (numel / ranks) + offsets[t] / ranks + within % chunk;
}

COURSE_HD inline float signed_by_bit(const uint8_t* bits, int64_t bit, float value) {
  return (bits[bit / 8] >> (bit % 8)) & 1u ? value : -value;
}

// Row p = piece p: partial[p] = the sum of (x + error)^2 over its elements.
struct PieceSquares {
  const float* x;
  const float* error;
  float* partial;
  const int64_t* piece_offsets;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t begin = piece_offsets[row];
    const float total = lanes.sum(piece_offsets[row + 1] - begin, [&](int64_t j) {
      const float v = x[begin + j] + error[begin + j];
      return v * v;
    });
    if (lanes.first()) partial[row] = total;
  }
};

// Row t = segment t: scales[t] = the square root of its pieces' sums, added in order, over the
// square root of its length (DeepSpeed's norm / sqrt(numel)).
struct SegmentScales {
  const float* partial;
  float* scales;
  const int64_t* offsets;
  const int64_t* segment_pieces;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t first = segment_pieces[row];
    const float total =
        lanes.sum(segment_pieces[row + 1] - first, [&](int64_t j) { return partial[first + j]; });
    const float length = static_cast<float>(offsets[row + 1] - offsets[row]);
    if (lanes.first()) scales[row] = sqrtf(total) / sqrtf(length);
  }
};

// Byte b of the buffer (elements 8 b .. 8 b + 7, of one chunk): their sign bits, written to their
// byte of the rank-major order, and their errors, x + error - the segment's scale with that sign.
struct SegmentSignBytes {
  const float* x;
  float* error;
  uint8_t* bits;
  const float* scales;
  const int64_t* offsets;
  int64_t segments, numel;
  int ranks;

  COURSE_HD void operator()(int64_t b) const {
    const int64_t first = 8 * b, t = segment_at(offsets, segments, first);
    const float scale = scales[t];
    unsigned byte = 0;
    for (int k = 0; k < 8; ++k) {
      const float v = x[first + k] + error[first + k];
      const bool positive = !(v < 0.0f);
      byte |= static_cast<unsigned>(positive) << k;
      error[first + k] = v - (positive ? scale : -scale);
    }
    bits[rank_major_position(offsets, t, first, ranks, numel) / 8] = static_cast<uint8_t>(byte);
  }
};

// Element k of a server's chunks: the sum over the `ranks` copies of sign x (scale / ranks).
struct AverageCompressed {
  const uint8_t* bits;
  const float* scales;
  float* out;
  const int64_t* offsets;
  int64_t segments, numel;
  int ranks;

  COURSE_HD void operator()(int64_t k) const {
    const int64_t t = segment_at(offsets, segments, k);
    const float inverse = 1.0f / static_cast<float>(ranks);
    float sum = 0.0f;
    for (int r = 0; r < ranks; ++r) {
      sum += signed_by_bit(bits, r * numel + k, scales[r * segments + t] * inverse);
    }
    out[k] = sum;
  }
};

// Element i of the buffer: its chunk's scale with its sign, read from the rank-major signs; 0 in
// a segment's padding.
struct ExpandSegments {
  const uint8_t* bits;
  const float* scales;
  float* out;
  const int64_t* offsets;
  const int64_t* valid_ends;
  int64_t segments, numel;
  int ranks;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t t = segment_at(offsets, segments, i);
    if (i >= valid_ends[t]) {
      out[i] = 0.0f;
      return;
    }
    const int64_t chunk = (offsets[t + 1] - offsets[t]) / ranks;
    const int64_t r = (i - offsets[t]) / chunk;
    out[i] = signed_by_bit(bits, rank_major_position(offsets, t, i, ranks, numel),
                           scales[r * segments + t]);
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_values(const Tensor& t, int64_t n, Device device, const char* name, const char* what) {
  COURSE_CHECK(t.dtype() == DType::kF32 && t.numel() == n && t.device() == device, name, ": ", what,
               " must be (", n, ",) f32 on ", device.str(), ", got ", t.str());
}

void check_signs(const Tensor& bits, int64_t n, Device device, const char* name) {
  COURSE_CHECK(bits.dtype() == DType::kU8 && bits.numel() == n / 8 && bits.device() == device, name,
               ": the signs must be (", n / 8, ",) u8 on ", device.str(), ", got ", bits.str());
}

}  // namespace

SegmentPlan segment_plan(const std::vector<int64_t>& lengths, int ranks, Device device,
                         const std::vector<int64_t>& valid) {
  COURSE_CHECK(ranks >= 1 && !lengths.empty(), "segment_plan: needs segments and ranks");
  COURSE_CHECK(valid.empty() || valid.size() == lengths.size(),
               "segment_plan: a count of values for each segment, or none");
  std::vector<int64_t> offsets = {0}, pieces = {0}, segment_pieces = {0}, valid_ends;
  for (size_t t = 0; t < lengths.size(); ++t) {
    const int64_t length = lengths[t], values = valid.empty() ? length : valid[t];
    COURSE_CHECK(length > 0 && length % (8 * ranks) == 0, "segment_plan: a segment of ", length,
                 " elements is not a positive multiple of 8 x ", ranks, " ranks");
    COURSE_CHECK(values >= 0 && values <= length, "segment_plan: ", values, " values in ", length);
    valid_ends.push_back(offsets.back() + values);
    for (int64_t at = offsets.back(); at < offsets.back() + length; at += ops::kSignPiece) {
      pieces.push_back(std::min(at + ops::kSignPiece, offsets.back() + length));
    }
    offsets.push_back(offsets.back() + length);
    segment_pieces.push_back(static_cast<int64_t>(pieces.size()) - 1);
  }
  const auto on_device = [&](const std::vector<int64_t>& v) {
    return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}).to(device);
  };
  return {.ranks = ranks,
          .numel = offsets.back(),
          .offsets = on_device(offsets),
          .piece_offsets = on_device(pieces),
          .segment_pieces = on_device(segment_pieces),
          .valid_ends = on_device(valid_ends)};
}

void compress_segments_(const Tensor& x, Tensor& error, Tensor& bits, Tensor& scales,
                        const SegmentPlan& plan) {
  const Device device = plan.offsets.device();
  const int64_t n = plan.numel, segments = plan.segments();
  check_values(x, n, device, "compress_segments_", "the values");
  check_values(error, n, device, "compress_segments_", "their error");
  check_values(scales, segments, device, "compress_segments_", "the scales");
  check_signs(bits, n, device, "compress_segments_");
  const int64_t pieces = plan.piece_offsets.numel() - 1;
  Tensor partial = Tensor::empty({pieces}, DType::kF32, device);
  for_each_row(device, pieces, ops::kSignPiece,
               ops::PieceSquares{x.data_as<float>(), error.data_as<float>(),
                                 partial.data_as<float>(), plan.piece_offsets.data_as<int64_t>()});
  for_each_row(
      device, segments, std::max<int64_t>(1, pieces / segments),
      ops::SegmentScales{partial.data_as<float>(), scales.data_as<float>(),
                         plan.offsets.data_as<int64_t>(), plan.segment_pieces.data_as<int64_t>()});
  for_each_index(device, n / 8,
                 ops::SegmentSignBytes{x.data_as<float>(), error.data_as<float>(),
                                       bits.data_as<uint8_t>(), scales.data_as<float>(),
                                       plan.offsets.data_as<int64_t>(), segments, n, plan.ranks},
                 8);
}

void average_compressed(const Tensor& bits, const Tensor& scales, Tensor& out,
                        const SegmentPlan& plan, int ranks) {
  const Device device = plan.offsets.device();
  COURSE_CHECK(plan.ranks == 1, "average_compressed: a server's chunks are laid out for one rank");
  check_values(out, plan.numel, device, "average_compressed", "out");
  check_values(scales, ranks * plan.segments(), device, "average_compressed", "the scales");
  check_signs(bits, ranks * plan.numel, device, "average_compressed");
  for_each_index(
      device, plan.numel,
      ops::AverageCompressed{bits.data_as<uint8_t>(), scales.data_as<float>(), out.data_as<float>(),
                             plan.offsets.data_as<int64_t>(), plan.segments(), plan.numel, ranks},
      ranks);
}

void expand_segments(const Tensor& bits, const Tensor& scales, Tensor& out,
                     const SegmentPlan& plan) {
  const Device device = plan.offsets.device();
  check_values(out, plan.numel, device, "expand_segments", "out");
  check_values(scales, plan.ranks * plan.segments(), device, "expand_segments", "the scales");
  check_signs(bits, plan.numel, device, "expand_segments");
  for_each_index(
      device, plan.numel,
      ops::ExpandSegments{bits.data_as<uint8_t>(), scales.data_as<float>(), out.data_as<float>(),
                          plan.offsets.data_as<int64_t>(), plan.valid_ends.data_as<int64_t>(),
                          plan.segments(), plan.numel, plan.ranks});
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::PieceSquares)
COURSE_INSTANTIATE_FOR_EACH_ROW(course::ops::SegmentScales)
COURSE_INSTANTIATE_FOR_EACH(course::ops::SegmentSignBytes)
COURSE_INSTANTIATE_FOR_EACH(course::ops::AverageCompressed)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ExpandSegments)

}  // namespace course
