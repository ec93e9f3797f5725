// The CPU's attention on (N, T, D) f32 heads, one matrix at a time and in bands of query rows
// (attention_heads_cpu.cc): what attention_heads.cc runs for f32 heads on the CPU without a
// score bias. Same arguments and results as attention_heads_forward / _backward.
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

}  // namespace course::detail
