// Scaled dot-product attention bodies shared by the CPU and the GPU, in the flash-attention
// manner: no (T, T) score matrix is stored. q, k, v and the output are (BH, T, D) contiguous
// (a row per head and position); forward keeps each query row's log-sum-exp of its scores,
// from which backward recomputes the probabilities P_ij = exp(s_ij - lse_i). Arithmetic in
// f32 whatever the dtype; with `causal`, query i sees keys j <= i.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr int64_t kMaxHeadDim = 256;

struct AttentionShape {
  int64_t seq, head_dim;
  float scale;  // 1 / sqrt(head_dim)
  bool causal;
  COURSE_HD int64_t keys_seen(int64_t i) const { return causal ? i + 1 : seq; }
};

template <class T>
COURSE_HD float dot_rows(const T* a, const T* b, int64_t n) {
  float s = 0.0f;
  for (int64_t d = 0; d < n; ++d) s += static_cast<float>(a[d]) * static_cast<float>(b[d]);
  return s;
}

// Query row r = (bh, i), one pass with an online softmax: the running maximum m and sum l
// rescale the accumulated output whenever a larger score arrives.
template <class T>
struct AttentionForward {
  const T *q, *k, *v;
  T* out;
  float* lse;
  AttentionShape shape;
  COURSE_HD void operator()(int64_t r) const {
    const int64_t D = shape.head_dim, i = r % shape.seq, head = r - i;
    const T* qi = q + r * D;
    float acc[kMaxHeadDim];
    for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = 0; j < shape.keys_seen(i); ++j) {
      const float s = shape.scale * dot_rows(qi, k + (head + j) * D, D);
      if (s > m) {
        const float rescale = expf(m - s);
        l *= rescale;
        for (int64_t d = 0; d < D; ++d) acc[d] *= rescale;
        m = s;
      }
      const float p = expf(s - m);
      l += p;
      const T* vj = v + (head + j) * D;
      for (int64_t d = 0; d < D; ++d) acc[d] += p * static_cast<float>(vj[d]);
    }
    for (int64_t d = 0; d < D; ++d) out[r * D + d] = T(acc[d] / l);
    lse[r] = m + logf(l);
  }
};

// Query row r: delta_i = dO_i . O_i (kept for the key pass), and
// dQ_i = scale sum_j P_ij (dO_i . V_j - delta_i) K_j.
template <class T>
struct AttentionBackwardQuery {
  const T *q, *k, *v, *out, *dout;
  const float* lse;
  float* delta;
  T* dq;
  AttentionShape shape;
  COURSE_HD void operator()(int64_t r) const {
    const int64_t D = shape.head_dim, i = r % shape.seq, head = r - i;
    const T* qi = q + r * D;
    const T* doi = dout + r * D;
    const float delta_i = dot_rows(doi, out + r * D, D);
    delta[r] = delta_i;
    float acc[kMaxHeadDim];
    for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
    for (int64_t j = 0; j < shape.keys_seen(i); ++j) {
      const T* kj = k + (head + j) * D;
      const float p = expf(shape.scale * dot_rows(qi, kj, D) - lse[r]);
      const float ds = p * (dot_rows(doi, v + (head + j) * D, D) - delta_i);
      for (int64_t d = 0; d < D; ++d) acc[d] += ds * static_cast<float>(kj[d]);
    }
    for (int64_t d = 0; d < D; ++d) dq[r * D + d] = T(shape.scale * acc[d]);
  }
};

// Key row r = (bh, j): dV_j = sum_i P_ij dO_i and dK_j = scale sum_i P_ij (dO_i . V_j -
// delta_i) Q_i, over the queries that see key j.
template <class T>
struct AttentionBackwardKey {
  const T *q, *k, *v, *dout;
  const float *lse, *delta;
  T *dk, *dv;
  AttentionShape shape;
  COURSE_HD void operator()(int64_t r) const {
    const int64_t D = shape.head_dim, j = r % shape.seq, head = r - j;
    const T* kj = k + r * D;
    const T* vj = v + r * D;
    float acc_k[kMaxHeadDim], acc_v[kMaxHeadDim];
    for (int64_t d = 0; d < D; ++d) acc_k[d] = acc_v[d] = 0.0f;
    for (int64_t i = shape.causal ? j : 0; i < shape.seq; ++i) {
      const int64_t qr = head + i;
      const T* qi = q + qr * D;
      const T* doi = dout + qr * D;
      const float p = expf(shape.scale * dot_rows(qi, kj, D) - lse[qr]);
      const float ds = p * (dot_rows(doi, vj, D) - delta[qr]);
      for (int64_t d = 0; d < D; ++d) {
        acc_v[d] += p * static_cast<float>(doi[d]);
        acc_k[d] += ds * static_cast<float>(qi[d]);
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      dk[r * D + d] = T(shape.scale * acc_k[d]);
      dv[r * D + d] = T(acc_v[d]);
    }
  }
};

}  // namespace course::ops
