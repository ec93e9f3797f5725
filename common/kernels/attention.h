// Multi-head scaled dot-product self-attention over a packed (B, T, 3C) q|k|v projection, as a
// GPT's attention layer computes it: C = H heads x D, softmax(q k^T / sqrt(D)) v per head,
// causal (a query sees itself and earlier positions) or bidirectional. The heads are permuted
// to (3, B, H, T, D) so each head's rows are contiguous, multiplied by batched GEMMs with the
// row kernels of attention_ops.h between them, and permuted back to (B, T, C); each pass holds
// one (B H, T, T) score matrix while it runs. Two fused paths skip the permutes and the score
// matrix: on a GPU, cuDNN's flash attention for bf16/f16 heads (flash_attention.h); on the CPU,
// one band of 64 query rows per thread for f32 heads without a score bias, read where q|k|v
// holds them (attention_heads_cpu.h). Only the log-sum-exp of each query is kept for the
// backward pass.
#pragma once

#include <cstdint>

#include "common/tensor/tensor.h"

namespace course {

struct AttentionSaved {
  Tensor qkv;         // the packed (B, T, 3C) input where a fused path read it, or
  Tensor qkv_heads;   // (3, B, H, T, D) in the compute dtype otherwise
  Tensor out;         // the (B, T, C) output where cuDNN's flash attention made it, or undefined
  Tensor lse;         // (B, H, T) f32 log-sum-exp of each query's scores
  Tensor score_bias;  // the forward's score bias, or undefined
  // The dtype the forward computed in, which the backward's dy must have.
  DType dtype() const { return qkv.defined() ? qkv.dtype() : qkv_heads.dtype(); }
};

// qkv (B, T, 3C) contiguous, any floating dtype; returns (B, T, C) in the same dtype. An optional
// score_bias (H, T, T) f32 is added to every sample's scaled scores before the softmax (a
// relative position bias, common/kernels/relative_position.h).
Tensor attention_forward(const Tensor& qkv, int64_t heads, bool causal, AttentionSaved& saved,
                         const Tensor* score_bias = nullptr);

// Returns d(qkv) (B, T, 3C) from dy (B, T, C); with a score bias in the forward, adds its
// gradient (the scores' gradient summed over the batch) into score_bias_grad (H, T, T) f32.
Tensor attention_backward(const Tensor& dy, int64_t heads, bool causal, const AttentionSaved& saved,
                          Tensor* score_bias_grad = nullptr);

}  // namespace course
