// Self-attention layer over the fused kernels of common/kernels/attention.h, behind the
// grouped q|k|v kernels where the heads are grouped.
#include "common/nn/self_attention.h"

#include "common/kernels/attention.h"
#include "common/nn/autocast.h"
#include "common/tensor/capture.h"

namespace course::nn {

SelfAttention::SelfAttention(int64_t heads, bool causal) : heads_(heads), causal_(causal) {
  COURSE_CHECK(heads > 0, "attention needs at least one head, got ", heads);
}

SelfAttention::SelfAttention(const GroupedHeads& grouped, bool causal)
    : heads_(grouped.heads), causal_(causal) {
  check_grouped_heads(grouped);
  // Neither grouped nor rotated: the input is already the packed (B, T, 3C).
  if (grouped.kv_heads != grouped.heads || grouped.rope_theta > 0.0f) grouped_ = grouped;
}

void SelfAttention::set_core(std::shared_ptr<const AttentionCore> core) {
  core_ = std::move(core);
  rotation_ = Tensor();  // its rows follow the core's split
}

Tensor SelfAttention::rotation(int64_t seq, Device device) {
  if (rotation_.defined() && rotation_.size(0) == seq && rotation_.device() == device) {
    return rotation_;
  }
  const ContextSplit split = core_ ? core_->split() : ContextSplit{};
  Tensor table;
  if (split.active()) {
    // The whole sequence's table, then the rows at this rank's positions.
    const int64_t whole = split.sequence_of(seq);
    const Tensor full = rotation_table(whole, *grouped_, device);
    const int64_t width = full.numel() / whole;
    table =
        split.table_rows(full.view({whole, width}), whole).view({seq, full.size(1), full.size(2)});
  } else {
    table = rotation_table(seq, *grouped_, device);
  }
  // One made during a graph capture is filled only when the graph replays: not kept.
  if (!capturing()) rotation_ = table;
  return table;
}

Tensor SelfAttention::run_forward(const Tensor& qkv, Context& ctx) {
  const Tensor packed =
      grouped_ ? grouped_qkv_forward(qkv, *grouped_, rotation(qkv.size(1), qkv.device())) : qkv;
  if (core_) return core_->forward(packed, heads_, causal_, ctx);
  AttentionSaved saved;
  Tensor y = attention_forward(packed, heads_, causal_, saved);
  ctx.save(std::move(saved));
  return y;
}

Tensor SelfAttention::run_backward(const Tensor& dy, Context& ctx) {
  Tensor dqkv;
  if (core_) {
    dqkv = core_->backward(dy, heads_, causal_, ctx);
  } else {
    const AttentionSaved& saved = ctx.saved<AttentionSaved>("SelfAttention");
    dqkv = attention_backward(as_dtype(dy, saved.dtype()), heads_, causal_, saved);
  }
  return grouped_ ? grouped_qkv_backward(dqkv, *grouped_, rotation(dqkv.size(1), dqkv.device()))
                  : dqkv;
}

}  // namespace course::nn
