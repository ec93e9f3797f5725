// Attention on (N, T, D) heads as batched GEMMs (cuBLAS on the GPU, oneDNN on the CPU for 16-bit
// heads and a score bias) around the row kernels of attention_ops.h; the CPU's f32 heads take
// attention_heads_cpu.cc's banded loop.
//
// Forward: S = scale Q K^T (+ B), P = softmax(S) (masked, lse kept), O = P V. Backward recomputes
// S and P from the lse (no (T, T) matrix is kept between the passes): dV = P^T dO, dP = dO V^T,
// dS = P (dP - rowsum(dO O)) (softmax's gradient), dQ = scale dS K, dK = scale dS^T Q; a score
// bias's gradient is dS summed over the batch. The row dot rowsum(dO O) equals rowsum(P dP)
// when the block holds every key, which is how the whole attention gets it.
#include "common/kernels/attention_heads.h"

#include "common/kernels/attention_heads_cpu.h"
#include "common/kernels/attention_ops.h"
#include "common/kernels/gemm.h"
#include "common/kernels/launch.h"
#include "common/kernels/linear.h"
#include "common/kernels/softmax_ops.h"

namespace course {

namespace {

bool contiguous(const Tensor& t) { return t.memory_format() == MemoryFormat::kContiguous; }

struct HeadDims {
  int64_t matrices, seq, head_dim;
  int64_t rows() const { return matrices * seq; }
  float scale() const { return attention_scale(head_dim); }
};

HeadDims head_dims_of(const Tensor& q, const Tensor& k, const Tensor& v) {
  COURSE_CHECK(q.dim() == 3 && contiguous(q) && k.shape() == q.shape() && v.shape() == q.shape() &&
                   k.dtype() == q.dtype() && v.dtype() == q.dtype() && contiguous(k) &&
                   contiguous(v),
               "attention heads need contiguous q, k, v of one (N, T, D) shape and dtype, got ",
               q.str(), ", ", k.str(), ", ", v.str());
  return {q.size(0), q.size(1), q.size(2)};
}

void check_rows(const Tensor& t, const HeadDims& n, Device device, const char* what) {
  COURSE_CHECK(
      t.dtype() == DType::kF32 && t.shape() == Shape({n.matrices, n.seq}) && t.device() == device,
      what, " must be f32 (", n.matrices, ", ", n.seq, ") on ", device.str(), ", got ", t.str());
}

void check_score_bias(const Tensor& bias, const HeadDims& n, Device device, const char* what) {
  COURSE_CHECK(bias.dtype() == DType::kF32 && bias.dim() == 3 && bias.size(0) > 0 &&
                   n.matrices % bias.size(0) == 0 && bias.size(1) == n.seq &&
                   bias.size(2) == n.seq && bias.device() == device,
               what, " must be f32 (H, ", n.seq, ", ", n.seq, ") with H dividing ", n.matrices,
               " on ", device.str(), ", got ", bias.str());
}

// S = scale Q K^T (+ the score bias) for every matrix: (N, T, T) in the heads' dtype.
Tensor scaled_scores(const Tensor& q, const Tensor& k, const Tensor& score_bias,
                     const HeadDims& n) {
  Tensor scores = Tensor::empty({n.matrices, n.seq, n.seq}, q.dtype(), q.device());
  gemm_batched(q, false, k, true, scores, n.scale());
  if (score_bias.defined()) {
    check_score_bias(score_bias, n, q.device(), "the attention's score bias");
    visit_floating(scores.dtype(), "attention score bias", [&]<class T>() {
      for_each_index(scores.device(), scores.numel(),
                     ops::AddScoreBias<T>{scores.data_as<T>(), score_bias.data_as<float>(),
                                          score_bias.size(0), n.seq});
    });
  }
  return scores;
}

}  // namespace

void attention_heads_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             Tensor& out, Tensor& lse, const Tensor& score_bias) {
  const HeadDims n = head_dims_of(q, k, v);
  out = Tensor::empty(q.shape(), q.dtype(), q.device());
  lse = Tensor::empty({n.matrices, n.seq}, DType::kF32, q.device());
  if (detail::takes_cpu_banded_attention(q, score_bias)) {
    detail::cpu_banded_attention_forward(q, k, v, causal, out, lse);
    return;
  }
  Tensor probs = scaled_scores(q, k, score_bias, n);
  visit_floating(q.dtype(), "attention_heads_forward", [&]<class T>() {
    for_each_row(
        q.device(), n.rows(), n.seq,
        ops::AttentionSoftmax<T>{probs.data_as<T>(), lse.data_as<float>(), {n.seq, causal}});
  });
  gemm_batched(probs, false, v, false, out);
}

void attention_heads_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                              const Tensor& lse, bool causal, const Tensor& row_dots,
                              AttentionHeadGradients& grads, const Tensor& score_bias,
                              Tensor* score_bias_grad) {
  const HeadDims n = head_dims_of(q, k, v);
  COURSE_CHECK(dout.shape() == q.shape() && dout.dtype() == q.dtype() && contiguous(dout),
               "attention heads backward got dout ", dout.str(), " for heads ", q.str());
  check_rows(lse, n, q.device(), "the attention's lse");
  if (row_dots.defined()) check_rows(row_dots, n, q.device(), "the attention's row dots");
  COURSE_CHECK(score_bias.defined() == (score_bias_grad != nullptr),
               "attention backward: a score bias's gradient goes with a forward that had one");
  if (score_bias_grad) check_score_bias(*score_bias_grad, n, q.device(), "its gradient");
  for (const Tensor* g : {&grads.dq, &grads.dk, &grads.dv}) {
    COURSE_CHECK(g->shape() == q.shape() && g->dtype() == q.dtype() && contiguous(*g),
                 "attention heads backward writes its gradients to ", g->str(), " for heads ",
                 q.str());
  }
  if (detail::takes_cpu_banded_attention(q, score_bias)) {
    detail::cpu_banded_attention_backward(q, k, v, dout, lse, causal, row_dots, grads);
    return;
  }
  Tensor probs = scaled_scores(q, k, score_bias, n);
  Tensor dscores = Tensor::empty(probs.shape(), probs.dtype(), probs.device());
  gemm_batched(dout, false, v, true, dscores);  // dP
  visit_floating(q.dtype(), "attention_heads_backward", [&]<class T>() {
    for_each_row(
        q.device(), n.rows(), n.seq,
        ops::AttentionProbabilities<T>{probs.data_as<T>(), lse.data_as<float>(), {n.seq, causal}});
    // dS, in place; the row dots from P and dP when the block holds every key.
    for_each_row(
        q.device(), n.rows(), n.seq,
        ops::SoftmaxBackward<T>{dscores.data_as<T>(), probs.data_as<T>(), dscores.data_as<T>(),
                                n.seq, row_dots.data_or_null<float>()});
  });
  if (score_bias_grad) {
    Tensor bias_sums = score_bias_grad->view({score_bias_grad->numel()});
    add_column_sums_(dscores.view({n.matrices / score_bias_grad->size(0), bias_sums.numel()}),
                     bias_sums);
  }
  const float beta = grads.accumulate ? 1.0f : 0.0f;
  gemm_batched(probs, true, dout, false, grads.dv, 1.0f, beta);
  gemm_batched(dscores, false, k, false, grads.dq, n.scale(), beta);
  gemm_batched(dscores, true, q, false, grads.dk, n.scale(), beta);
}

Tensor attention_row_dots(const Tensor& out, const Tensor& dout) {
  COURSE_CHECK(out.dim() == 3 && contiguous(out) && dout.shape() == out.shape() &&
                   dout.dtype() == out.dtype() && contiguous(dout),
               "attention row dots need contiguous out and dout of one (N, T, D) shape, got ",
               out.str(), ", ", dout.str());
  Tensor dots = Tensor::empty({out.size(0), out.size(1)}, DType::kF32, out.device());
  visit_floating(out.dtype(), "attention_row_dots", [&]<class T>() {
    for_each_row(out.device(), dots.numel(), out.size(2),
                 ops::AttentionRowDot<T>{out.data_as<T>(), dout.data_as<T>(), dots.data_as<float>(),
                                         out.size(2)});
  });
  return dots;
}

void merge_attention_block(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b) {
  COURSE_CHECK(out.dim() == 3 && contiguous(out) && out_b.shape() == out.shape() &&
                   out_b.dtype() == out.dtype() && contiguous(out_b),
               "merging attention blocks needs outputs of one (N, T, D) shape, got ", out.str(),
               ", ", out_b.str());
  const HeadDims n{out.size(0), out.size(1), out.size(2)};
  check_rows(lse, n, out.device(), "the running lse");
  check_rows(lse_b, n, out.device(), "the block's lse");
  Tensor merged = Tensor::empty(lse.shape(), DType::kF32, lse.device());
  visit_floating(out.dtype(), "merge_attention_block", [&]<class T>() {
    for_each_row(
        out.device(), n.rows(), n.head_dim,
        ops::MergeAttentionBlock<T>{out.data_as<T>(), lse.data_as<float>(), out_b.data_as<T>(),
                                    lse_b.data_as<float>(), merged.data_as<float>(), n.head_dim});
  });
  lse = merged;
}

}  // namespace course
