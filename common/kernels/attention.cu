// Attention on the packed (B, T, 3C) q|k|v: cuDNN's flash attention where it takes the call
// (flash_attention.h), the CPU's banded loop on the packed rows for f32 heads
// (attention_heads_cpu.h), else permutes to and from the heads' layout around the head-layout
// core of attention_heads.h (the bodies shared with it are in attention_ops.h).
#include "common/kernels/attention.h"
#include "common/kernels/attention_heads.h"
#include "common/kernels/attention_heads_cpu.h"
#include "common/kernels/attention_ops.h"
#include "common/kernels/flash_attention.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/multiply_adds.h"
#include "common/kernels/permute.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

// (B, T, 3, H, D) -> (3, B, H, T, D), and (B, H, T, D) <-> (B, T, H, D).
const std::vector<int> kQkvToHeads = {2, 0, 3, 1, 4};
const std::vector<int> kSwapHeadsAndTime = {0, 2, 1, 3};

struct Dims {
  int64_t batch, seq, heads, head_dim;
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

void check_score_bias_shape(const Tensor& bias, const Dims& n, const char* what) {
  COURSE_CHECK(bias.shape() == Shape({n.heads, n.seq, n.seq}), what, " must be (", n.heads, ", ",
               n.seq, ", ", n.seq, "), got ", bias.str());
}

}  // namespace

Tensor attention_forward(const Tensor& qkv, int64_t heads, bool causal, AttentionSaved& saved,
                         const Tensor* score_bias) {
  const Dims n = dims_of(qkv, heads);
  // Q K^T and P V over every (query, key) pair, as llm.c and Megatron count them (causal or not).
  MultiplyAddCount::add(2.0 * n.batch * n.heads * n.seq * n.seq * n.head_dim);
  saved.score_bias = score_bias ? *score_bias : Tensor();
  if (score_bias) check_score_bias_shape(*score_bias, n, "the attention's score bias");
  Tensor flash_out;
  if (!score_bias && flash_attention_forward(qkv, heads, causal, attention_scale(n.head_dim),
                                             flash_out, saved.lse)) {
    saved.qkv = qkv;
    saved.out = flash_out;
    return flash_out;
  }
  if (detail::takes_cpu_banded_attention(qkv, saved.score_bias)) {
    saved.qkv = qkv;
    Tensor out = Tensor::empty({n.batch, n.seq, n.heads * n.head_dim}, qkv.dtype(), qkv.device());
    saved.lse = Tensor::empty({n.batch, n.heads, n.seq}, DType::kF32, qkv.device());
    Tensor lse = saved.lse.view({n.batch * n.heads, n.seq});
    detail::cpu_packed_attention_forward(qkv, heads, causal, out, lse);
    return out;
  }
  saved.qkv_heads = permute(qkv.view({n.batch, n.seq, 3, n.heads, n.head_dim}), kQkvToHeads);
  Tensor out, lse;
  attention_heads_forward(heads_of(saved.qkv_heads, 0, n), heads_of(saved.qkv_heads, 1, n),
                          heads_of(saved.qkv_heads, 2, n), causal, out, lse, saved.score_bias);
  saved.lse = lse.view({n.batch, n.heads, n.seq});
  return permute(out.view({n.batch, n.heads, n.seq, n.head_dim}), kSwapHeadsAndTime)
      .view({n.batch, n.seq, n.heads * n.head_dim});
}

namespace {

// The backward of cpu_packed_attention_forward: dqkv straight into the packed layout.
Tensor packed_attention_backward(const Tensor& dy, int64_t heads, bool causal,
                                 const AttentionSaved& saved) {
  const Dims n = dims_of(saved.qkv, heads);
  COURSE_CHECK(dy.shape() == Shape({n.batch, n.seq, n.heads * n.head_dim}) &&
                   dy.dtype() == saved.qkv.dtype() &&
                   dy.memory_format() == MemoryFormat::kContiguous,
               "attention backward got dy ", dy.str(), " for a forward of ", saved.qkv.str());
  Tensor dqkv = Tensor::empty(saved.qkv.shape(), dy.dtype(), dy.device());
  detail::cpu_packed_attention_backward(saved.qkv, dy, saved.lse.view({n.batch * n.heads, n.seq}),
                                        heads, causal, dqkv);
  return dqkv;
}

// The backward on the heads' layout (3, B, H, T, D), dqkv permuted back to (B, T, 3C).
Tensor heads_attention_backward(const Tensor& dy, const Tensor& qkv_heads, int64_t heads,
                                bool causal, const AttentionSaved& saved, Tensor* score_bias_grad) {
  const Dims n{qkv_heads.size(1), qkv_heads.size(3), heads, qkv_heads.size(4)};
  COURSE_CHECK(qkv_heads.size(2) == heads &&
                   dy.shape() == Shape({n.batch, n.seq, n.heads * n.head_dim}) &&
                   dy.dtype() == qkv_heads.dtype(),
               "attention backward got dy ", dy.str(), " for a forward of ", qkv_heads.str());
  if (score_bias_grad) check_score_bias_shape(*score_bias_grad, n, "the score bias's gradient");
  const Tensor dout = permute(dy.view({n.batch, n.seq, n.heads, n.head_dim}), kSwapHeadsAndTime)
                          .view({n.batch * n.heads, n.seq, n.head_dim});
  Tensor dqkv_heads = Tensor::empty(qkv_heads.shape(), dy.dtype(), dy.device());
  AttentionHeadGradients grads{heads_of(dqkv_heads, 0, n), heads_of(dqkv_heads, 1, n),
                               heads_of(dqkv_heads, 2, n)};
  attention_heads_backward(heads_of(qkv_heads, 0, n), heads_of(qkv_heads, 1, n),
                           heads_of(qkv_heads, 2, n), dout,
                           saved.lse.view({n.batch * n.heads, n.seq}), causal, Tensor(), grads,
                           saved.score_bias, score_bias_grad);
  return permute(dqkv_heads, inverse_permutation(kQkvToHeads))
      .view({n.batch, n.seq, 3 * n.heads * n.head_dim});
}

// The backward of a forward that cuDNN's flash attention ran; should cuDNN have no engine for
// the backward of the shape, the course's kernels run it on the same lse.
Tensor backward_after_flash_attention(const Tensor& dy, int64_t heads, bool causal,
                                      const AttentionSaved& saved) {
  const Dims n = dims_of(saved.qkv, heads);
  Tensor dqkv;
  if (flash_attention_backward(saved.qkv, saved.out, dy, saved.lse, heads, causal,
                               attention_scale(n.head_dim), dqkv)) {
    return dqkv;
  }
  const Tensor qkv_heads =
      permute(saved.qkv.view({n.batch, n.seq, 3, n.heads, n.head_dim}), kQkvToHeads);
  return heads_attention_backward(dy, qkv_heads, heads, causal, saved, nullptr);
}

}  // namespace

Tensor attention_backward(const Tensor& dy, int64_t heads, bool causal, const AttentionSaved& saved,
                          Tensor* score_bias_grad) {
  if (saved.qkv.defined()) {
    COURSE_CHECK(score_bias_grad == nullptr,
                 "attention backward: a score bias's gradient goes with a forward that had one");
    return saved.out.defined() ? backward_after_flash_attention(dy, heads, causal, saved)
                               : packed_attention_backward(dy, heads, causal, saved);
  }
  COURSE_CHECK(saved.qkv_heads.defined(), "attention backward without its forward");
  return heads_attention_backward(dy, saved.qkv_heads, heads, causal, saved, score_bias_grad);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define ATTENTION(T)                                              \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AttentionSoftmax<T>)       \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AttentionProbabilities<T>) \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::AttentionRowDot<T>)        \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::MergeAttentionBlock<T>)    \
  COURSE_INSTANTIATE_FOR_EACH(ops::AddScoreBias<T>)
COURSE_FLOAT_TYPES(ATTENTION)

}  // namespace course
