// 1-bit compression with error feedback as DeepSpeed's compressed all-reduce computes it (its
// runtime/comm/nccl.py), the arithmetic of 1-bit Adam and 1-bit LAMB
// (common/parallel/data_parallel/compressed_allreduce.h); bodies in sign_compression.cu.
//
// A flat buffer holds segments (one per parameter tensor), each cut into `ranks` equal chunks.
// A segment travels as one sign bit per element (set for >= 0) and one f32 scale, its root mean
// square: scale = ||v|| / sqrt(length), v the values plus the error the last call left; the
// error then keeps v - scale * sign(v). The signs are laid out rank-major: chunk r of every
// segment, segment after segment, then chunk r + 1, so the bytes rank r receives are one block.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// Where a buffer's segments and their chunks lie, made once on the buffer's device.
struct SegmentPlan {
  int ranks = 1;
  int64_t numel = 0;      // every segment together
  Tensor offsets;         // (T + 1,) i64: segment t is [offsets[t], offsets[t + 1])
  Tensor piece_offsets;   // (P + 1,) i64: the segments cut into pieces a row of work each
  Tensor segment_pieces;  // (T + 1,) i64: segment t's pieces are [segment_pieces[t], ...[t + 1])
  Tensor valid_ends;      // (T,) i64: segment t's elements from valid_ends[t] on are padding
  int64_t segments() const { return offsets.numel() - 1; }
};

// The plan of segments of these lengths (each a positive multiple of 8 x ranks), the first
// valid[t] elements of segment t its values and the rest padding (valid empty: none is).
SegmentPlan segment_plan(const std::vector<int64_t>& lengths, int ranks, Device device,
                         const std::vector<int64_t>& valid = {});

// x (n,) f32 plus error (n,) f32 (updated in place) becomes, per segment t, scales[t] (T,) f32
// (its root mean square) and its sign bits in bits (n / 8,) u8, rank-major as above.
void compress_segments_(const Tensor& x, Tensor& error, Tensor& bits, Tensor& scales,
                        const SegmentPlan& plan);

// A server's mean of `ranks` compressed copies of its chunks: bits (ranks m / 8,) u8, copy after
// copy, each m elements laid out by `plan` (one rank); scales (ranks T,) f32, copy r's scale of
// segment t at r T + t. out (m,) f32 = the sum over the copies of sign x (scale / ranks), added
// in rank order (DeepSpeed's).
void average_compressed(const Tensor& bits, const Tensor& scales, Tensor& out,
                        const SegmentPlan& plan, int ranks);

// What compressed chunks stand for, back in the buffer's layout: out (n,) f32 from bits (n / 8,)
// u8 rank-major as compress_segments_ writes them and scales (ranks T,) f32, chunk r of segment
// t scaled by scales[r T + t] (each rank's server scales, gathered); the padding becomes 0 (as
// DeepSpeed's buffer drops it).
void expand_segments(const Tensor& bits, const Tensor& scales, Tensor& out,
                     const SegmentPlan& plan);

}  // namespace course
