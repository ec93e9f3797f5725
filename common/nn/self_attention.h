// Multi-head self-attention on a packed q|k|v input -> (B, T, C): the parameter-free core of a
// transformer's attention (the q|k|v and output projections are Linear layers around it).
// Causal for a GPT, bidirectional for an encoder. With grouped heads (Llama), the input is
// (B, T, (H + 2 G) D): G key/value heads shared by groups of query heads, queries and keys
// turned by rotary position embedding (common/kernels/grouped_qkv.h); otherwise (B, T, 3C)
// (GroupedHeads with G = H and no rotation is that too); the rotation's table is made once per
// sequence length. The attention itself is the layer's core (attention_core.h): over the rows
// given, unless another core is set.
#pragma once

#include <memory>
#include <optional>

#include "common/kernels/grouped_qkv.h"
#include "common/nn/attention_core.h"
#include "common/nn/module.h"

namespace course::nn {

class SelfAttention : public Module {
 public:
  SelfAttention(int64_t heads, bool causal);
  SelfAttention(const GroupedHeads& grouped, bool causal);

  // Attends through `core` from now on (null: over the rows given again). Rotary positions then
  // turn each row by its position in the core's split of the sequence (a context-parallel
  // rank's two chunks).
  void set_core(std::shared_ptr<const AttentionCore> core);

 protected:
  Tensor run_forward(const Tensor& qkv, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  // The rotation table of the `seq` rows given, on `device` (grouped_qkv.h): positions 0 to
  // seq - 1, or under a core's split the rank's positions of the whole sequence; made once per
  // length, device and core, and shared by both passes.
  Tensor rotation(int64_t seq, Device device);

  int64_t heads_;
  bool causal_;
  std::optional<GroupedHeads> grouped_;
  Tensor rotation_;  // undefined until a rotated forward, and for unrotated heads
  std::shared_ptr<const AttentionCore> core_;
};

}  // namespace course::nn
