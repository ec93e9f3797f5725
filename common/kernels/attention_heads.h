// Scaled dot-product attention on heads already laid out as a batch of (T, D) matrices
// (N = batch x heads): the core that attention.h wraps with its permutes, and the pieces that
// blockwise attention runs one block of keys at a time (ring attention, context parallelism).
//
// A block's result is (out, lse): its queries' outputs over the block's keys and the log-sum-exp
// of their scores. Two blocks of one query's keys merge exactly: lse = log(e^lse_a + e^lse_b),
// out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b. The backward of one block needs the
// whole attention's lse (so P is the final probabilities) and each query's row dot
// rowsum(dO * O) over the final output: dS = P (dP - rowsum(dO * O)).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

// The scores' scale for heads of D values, 1 / sqrt(D), in every path (batched and banded).
inline float attention_scale(int64_t head_dim) {
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

// q, k, v (N, T, D) contiguous, one floating dtype (the same T: a square block). Writes out
// (N, T, D) in that dtype and lse (N, T) f32. `causal`: query i sees keys j <= i (a block on the
// diagonal); otherwise every key. An optional score bias (H, T, T) f32, N a multiple of H, is
// added to every sample's scaled scores.
void attention_heads_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             Tensor& out, Tensor& lse, const Tensor& score_bias = Tensor());

struct AttentionHeadGradients {
  Tensor dq, dk, dv;  // (N, T, D) each, contiguous, the inputs' dtype, given by the caller
  // true: the gradients are added to what dq, dk, dv hold; false: written over it.
  bool accumulate = false;
};

// The gradients of one block from dout (N, T, D). `lse` (N, T) is the whole attention's. With
// `row_dots` (N, T) f32 (attention_row_dots of the whole output), the block is one of several;
// undefined, it is the whole attention and the dots come from its own P and dP. A score bias
// of the forward adds its gradient (dS summed over the batch) into *score_bias_grad.
void attention_heads_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                              const Tensor& lse, bool causal, const Tensor& row_dots,
                              AttentionHeadGradients& grads, const Tensor& score_bias = Tensor(),
                              Tensor* score_bias_grad = nullptr);

// rowsum(dout * out) over D for each of the N x T rows: (N, T) f32.
Tensor attention_row_dots(const Tensor& out, const Tensor& dout);

// Merges block b into the running (out, lse) in place, as above. A running lse of -inf (no key
// yet) takes block b as it is.
void merge_attention_block(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b);

}  // namespace course
