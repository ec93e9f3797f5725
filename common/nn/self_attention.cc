// Self-attention layer over the fused kernels of common/kernels/attention.h.
#include "common/nn/self_attention.h"

#include "common/kernels/attention.h"
#include "common/nn/autocast.h"

namespace course::nn {

SelfAttention::SelfAttention(int64_t heads, bool causal) : heads_(heads), causal_(causal) {
  COURSE_CHECK(heads > 0, "attention needs at least one head, got ", heads);
}

Tensor SelfAttention::run_forward(const Tensor& qkv, Context& ctx) {
  AttentionSaved saved;
  Tensor y = attention_forward(qkv, heads_, causal_, saved);
  ctx.save(std::move(saved));
  return y;
}

Tensor SelfAttention::run_backward(const Tensor& dy, Context& ctx) {
  const AttentionSaved& saved = ctx.saved<AttentionSaved>("SelfAttention");
  return attention_backward(as_dtype(dy, saved.qkv_heads.dtype()), heads_, causal_, saved);
}

}  // namespace course::nn
