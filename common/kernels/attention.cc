// Attention as batched GEMMs over the heads (cuBLAS on the GPU, OpenBLAS on the CPU) around the
// row kernels of attention_ops.h, with permutes to and from the heads' layout.
//
// Forward: S = scale Q K^T, P = softmax(S) (masked, lse kept), O = P V. Backward recomputes S
// and P from the lse (no (T, T) matrix is kept between the passes): dV = P^T dO, dP = dO V^T,
// dS = P (dP - rowsum(P dP)) (softmax's gradient), dQ = scale dS K, dK = scale dS^T Q. A score
// bias B (H, T, T) enters S = scale Q K^T + B; its gradient is dS summed over the batch.
#include "common/kernels/attention.h"

#include <cmath>

#include "common/kernels/attention_ops.h"
#include "common/kernels/gemm.h"
#include "common/kernels/launch.h"
#include "common/kernels/linear.h"
#include "common/kernels/permute.h"
#include "common/kernels/softmax_ops.h"

namespace course {

namespace {

// (B, T, 3, H, D) -> (3, B, H, T, D), and (B, H, T, D) <-> (B, T, H, D).
const std::vector<int> kQkvToHeads = {2, 0, 3, 1, 4};
const std::vector<int> kSwapHeadsAndTime = {0, 2, 1, 3};

struct Dims {
  int64_t batch, seq, heads, head_dim;
  int64_t rows() const { return batch * heads * seq; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
  ops::AttentionShape shape(bool causal) const { return {seq, causal}; }
};

Dims dims_of(const Tensor& qkv, int64_t heads) {
  COURSE_CHECK(
      qkv.dim() == 3 && qkv.size(2) % 3 == 0 && qkv.memory_format() == MemoryFormat::kContiguous,
      "attention needs a contiguous (B, T, 3C) q|k|v tensor, got ", qkv.str());
  const int64_t channels = qkv.size(2) / 3;
  COURSE_CHECK(heads > 0 && channels % heads == 0, "attention width ", channels,
               " does not divide into ", heads, " heads");
  return {qkv.size(0), qkv.size(1), heads, channels / heads};
}

// Q, K or V (which = 0, 1, 2) of the (3, B, H, T, D) heads as a batch of (T, D) matrices.
Tensor heads_of(const Tensor& qkv_heads, int which, const Dims& n) {
  return qkv_heads.slice(which, which + 1).view({n.batch * n.heads, n.seq, n.head_dim});
}

// S = scale Q K^T (+ the score bias) for every head: (BH, T, T) in the heads' dtype.
Tensor scaled_scores(const Tensor& qkv_heads, const Tensor& score_bias, const Dims& n) {
  Tensor scores =
      Tensor::empty({n.batch * n.heads, n.seq, n.seq}, qkv_heads.dtype(), qkv_heads.device());
  gemm_batched(heads_of(qkv_heads, 0, n), false, heads_of(qkv_heads, 1, n), true, scores,
               n.scale());
  if (score_bias.defined()) {
    visit_floating(scores.dtype(), "attention score bias", [&]<class T>() {
      for_each_index(
          scores.device(), scores.numel(),
          ops::AddScoreBias<T>{scores.data_as<T>(), score_bias.data_as<float>(), n.heads, n.seq});
    });
  }
  return scores;
}

void check_score_bias(const Tensor& bias, const Dims& n, Device device, const char* what) {
  COURSE_CHECK(bias.dtype() == DType::kF32 && bias.shape() == Shape({n.heads, n.seq, n.seq}) &&
                   bias.device() == device,
               what, " must be f32 (", n.heads, ", ", n.seq, ", ", n.seq, ") on ", device.str(),
               ", got ", bias.str());
}

}  // namespace

Tensor attention_forward(const Tensor& qkv, int64_t heads, bool causal, AttentionSaved& saved,
                         const Tensor* score_bias) {
  const Dims n = dims_of(qkv, heads);
  saved.score_bias = score_bias ? *score_bias : Tensor();
  if (score_bias) check_score_bias(*score_bias, n, qkv.device(), "the attention's score bias");
  saved.qkv_heads = permute(qkv.view({n.batch, n.seq, 3, n.heads, n.head_dim}), kQkvToHeads);
  saved.lse = Tensor::empty({n.batch, n.heads, n.seq}, DType::kF32, qkv.device());
  Tensor probs = scaled_scores(saved.qkv_heads, saved.score_bias, n);
  visit_floating(qkv.dtype(), "attention_forward", [&]<class T>() {
    for_each_row(
        qkv.device(), n.rows(), n.seq,
        ops::AttentionSoftmax<T>{probs.data_as<T>(), saved.lse.data_as<float>(), n.shape(causal)});
  });
  Tensor out_heads =
      Tensor::empty({n.batch, n.heads, n.seq, n.head_dim}, qkv.dtype(), qkv.device());
  Tensor out = out_heads.view({n.batch * n.heads, n.seq, n.head_dim});
  gemm_batched(probs, false, heads_of(saved.qkv_heads, 2, n), false, out);
  return permute(out_heads, kSwapHeadsAndTime).view({n.batch, n.seq, n.heads * n.head_dim});
}

Tensor attention_backward(const Tensor& dy, int64_t heads, bool causal, const AttentionSaved& saved,
                          Tensor* score_bias_grad) {
  COURSE_CHECK(saved.qkv_heads.defined(), "attention backward without its forward");
  const Tensor& qkv_heads = saved.qkv_heads;
  const Dims n{qkv_heads.size(1), qkv_heads.size(3), heads, qkv_heads.size(4)};
  COURSE_CHECK(qkv_heads.size(2) == heads &&
                   dy.shape() == Shape({n.batch, n.seq, n.heads * n.head_dim}) &&
                   dy.dtype() == qkv_heads.dtype(),
               "attention backward got dy ", dy.str(), " for a forward of ", qkv_heads.str());
  const Tensor dout = permute(dy.view({n.batch, n.seq, n.heads, n.head_dim}), kSwapHeadsAndTime)
                          .view({n.batch * n.heads, n.seq, n.head_dim});
  const Tensor q = heads_of(qkv_heads, 0, n), k = heads_of(qkv_heads, 1, n),
               v = heads_of(qkv_heads, 2, n);
  COURSE_CHECK(saved.score_bias.defined() == (score_bias_grad != nullptr),
               "attention backward: a score bias's gradient goes with a forward that had one");
  if (score_bias_grad) {
    check_score_bias(*score_bias_grad, n, dy.device(), "the score bias's gradient");
  }
  Tensor probs = scaled_scores(qkv_heads, saved.score_bias, n);
  Tensor dscores = Tensor::empty(probs.shape(), probs.dtype(), probs.device());
  gemm_batched(dout, false, v, true, dscores);  // dP
  visit_floating(dy.dtype(), "attention_backward", [&]<class T>() {
    for_each_row(dy.device(), n.rows(), n.seq,
                 ops::AttentionProbabilities<T>{probs.data_as<T>(), saved.lse.data_as<float>(),
                                                n.shape(causal)});
    for_each_row(dy.device(), n.rows(), n.seq,
                 ops::SoftmaxBackward<T>{dscores.data_as<T>(), probs.data_as<T>(),
                                         dscores.data_as<T>(), n.seq});  // dS, in place
  });
  if (score_bias_grad) {
    Tensor bias_sums = score_bias_grad->view({score_bias_grad->numel()});
    add_column_sums_(dscores.view({n.batch, bias_sums.numel()}), bias_sums);
  }
  Tensor dqkv_heads = Tensor::empty(qkv_heads.shape(), dy.dtype(), dy.device());
  Tensor dq = heads_of(dqkv_heads, 0, n), dk = heads_of(dqkv_heads, 1, n),
         dv = heads_of(dqkv_heads, 2, n);
  gemm_batched(probs, true, dout, false, dv);
  gemm_batched(dscores, false, k, false, dq, n.scale());
  gemm_batched(dscores, true, q, false, dk, n.scale());
  return permute(dqkv_heads, inverse_permutation(kQkvToHeads))
      .view({n.batch, n.seq, 3 * n.heads * n.head_dim});
}

}  // namespace course
