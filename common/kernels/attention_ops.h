// The row kernels of scaled dot-product attention (row_lanes.h), between the batched GEMMs of
// attention.cu: the scores of one head are a (T, T) matrix, a row per query, computed in f32
// whatever the dtype they are stored in. Forward keeps each query row's log-sum-exp, from which
// backward recomputes the probabilities P_ij = exp(s_ij - lse_i). With `causal`, query i sees
// keys j <= i, and the keys it does not see get probability 0. An optional score bias is added
// to the scores before the rows run (AddScoreBias).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/exp_poly.h"
#include "common/kernels/row_lanes.h"
#include "common/kernels/softmax_ops.h"

namespace course::ops {

struct AttentionShape {
  int64_t seq;
  bool causal;
  COURSE_HD int64_t keys_seen(int64_t i) const { return causal ? i + 1 : seq; }
};

// Row r = (bh, i) of the scaled scores, in place: P_ij = softmax over the keys the query sees,
// 0 elsewhere; lse_r the log-sum-exp of the seen scores.
template <class T>
struct AttentionSoftmax {
  T* scores;  // (BH, T, T)
  float* lse;
  AttentionShape shape;
  template <class Lanes>
  COURSE_HD void operator()(int64_t r, const Lanes& lanes) const {
    T* row = scores + r * shape.seq;
    const int64_t seen = shape.keys_seen(r % shape.seq);
    const float row_lse = softmax_row(lanes, row, row, seen);
    lanes.for_each(shape.seq - seen, [&](int64_t j) { row[seen + j] = T(0.0f); });
    if (lanes.first()) lse[r] = row_lse;
  }
};

// Row r of the recomputed scaled scores, in place: P_ij = exp(s_ij - lse_r), 0 where unseen.
template <class T>
struct AttentionProbabilities {
  T* scores;  // (BH, T, T)
  const float* lse;
  AttentionShape shape;
  template <class Lanes>
  COURSE_HD void operator()(int64_t r, const Lanes& lanes) const {
    T* row = scores + r * shape.seq;
    const int64_t seen = shape.keys_seen(r % shape.seq);
    const float row_lse = lse[r];
    lanes.for_each(shape.seq, [&](int64_t j) {
      row[j] = T(j < seen ? exp_poly(static_cast<float>(row[j]) - row_lse) : 0.0f);
    });
  }
};

// Row r of (N T, D): dots_r = sum_d dout_rd out_rd.
template <class T>
struct AttentionRowDot {
  const T* out;
  const T* dout;
  float* dots;
  int64_t head_dim;
  template <class Lanes>
  COURSE_HD void operator()(int64_t r, const Lanes& lanes) const {
    const int64_t base = r * head_dim;
    const float dot = lanes.sum(head_dim, [&](int64_t d) {
      return static_cast<float>(out[base + d]) * static_cast<float>(dout[base + d]);
    });
    if (lanes.first()) dots[r] = dot;
  }
};

// Row r of (N T, D): the running (out, lse) merged with a block's (out_b, lse_b) by their
// log-sum-exps, out in place and the merged lse to lse_out (not over lse, which other lanes of
// the row may still be reading); a side at -inf (no key seen) weighs 0.
template <class T>
struct MergeAttentionBlock {
  T* out;
  const float* lse;
  const T* out_b;
  const float* lse_b;
  float* lse_out;
  int64_t head_dim;
  template <class Lanes>
  COURSE_HD void operator()(int64_t r, const Lanes& lanes) const {
    const float a = lse[r], b = lse_b[r], top = fmaxf(a, b);
    if (top == -INFINITY) {
      if (lanes.first()) lse_out[r] = top;
      return;
    }
    const float weight_a = expf(a - top), weight_b = expf(b - top);
    const float total = weight_a + weight_b;
    const int64_t base = r * head_dim;
    lanes.for_each(head_dim, [&](int64_t d) {
      out[base + d] = T((weight_a * static_cast<float>(out[base + d]) +
                         weight_b * static_cast<float>(out_b[base + d])) /
                        total);
    });
    if (lanes.first()) lse_out[r] = top + logf(total);
  }
};

// Element i of the (B H, T, T) scaled scores += bias[h, q, k], an (H, T, T) f32 score bias
// shared by the batch (CoAtNet's relative positions), before the softmax.
template <class T>
struct AddScoreBias {
  T* scores;
  const float* bias;
  int64_t heads, seq;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t plane = seq * seq, head = i / plane % heads;
    scores[i] = T(static_cast<float>(scores[i]) + bias[head * plane + i % plane]);
  }
};

}  // namespace course::ops
