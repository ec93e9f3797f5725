// The CPU's attention on f32 heads, one matrix at a time and in bands of query rows
// (attention_heads_cpu.cc): what attention_heads.cc runs for (N, T, D) f32 heads on the CPU
// without a score bias (same arguments and results as attention_heads_forward / _backward), and
// what attention.cu runs on a packed f32 q|k|v there, without permuting it to the heads' layout.
#pragma once

#include "common/kernels/attention_heads.h"

namespace course::detail {

// f32 heads on the CPU without a score bias.
bool takes_cpu_banded_attention(const Tensor& q, const Tensor& score_bias);

// out (N, T, D) and lse (N, T), allocated by the caller.
void cpu_banded_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                  Tensor& out, Tensor& lse);
void cpu_banded_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& dout, const Tensor& lse, bool causal,
                                   const Tensor& row_dots, AttentionHeadGradients& grads);

// The whole attention on a contiguous packed (B, T, 3C) q|k|v of `heads` heads: out (B, T, C)
// and lse (B heads, T); backward, dqkv (B, T, 3C) from a contiguous dy (B, T, C). The caller
// allocates the results.
void cpu_packed_attention_forward(const Tensor& qkv, int64_t heads, bool causal, Tensor& out,
                                  Tensor& lse);
void cpu_packed_attention_backward(const Tensor& qkv, const Tensor& dy, const Tensor& lse,
                                   int64_t heads, bool causal, Tensor& dqkv);

}  // namespace course::detail
