// Self-attention (causal for a decoder, bidirectional for an encoder) with its heads split over the
// tensor-parallel ranks (Megatron-LM): the q|k|v projection column-parallel (rank r computes the q
// of heads [r H/p, (r+1) H/p) and the k and v of key/value heads [r G/p, (r+1) G/p): with
// grouped-query attention a rank's query heads are exactly the groups of its key/value heads),
// attention of those heads on the rank alone, the output projection row-parallel (its partial
// products summed once). Cut from the whole layers every rank built from the same seed, so it
// computes what the whole attention computes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/nn/self_attention.h"
#include "common/parallel/tensor_parallel/parallel_linear.h"

namespace course::parallel {

// The projections' names among the layer's children (the whole model's: GPT-2's, or Llama's
// wqkv and wo).
struct AttentionNames {
  std::string qkv = "c_attn", projection = "c_proj";
};

class TensorParallelAttention : public nn::Module {
 public:
  // qkv: ((H + 2 G) D, C) q|k|v projection; projection: (C, H D). Throws when the query or the
  // key/value heads do not split over the ranks. `between`: the input and output whole on
  // every rank or cut along the sequence.
  TensorParallelAttention(const nn::Linear& qkv, const nn::Linear& projection,
                          const GroupedHeads& heads, bool causal, std::shared_ptr<Communicator> tp,
                          Activations between = Activations::kReplicated,
                          AttentionNames names = {});

  std::vector<Child> children() override;
  RowParallelLinear& projection() { return projection_; }
  nn::SelfAttention& core() { return core_; }
  // Collective over the tensor-parallel ranks: the whole layers receive every rank's heads (the
  // q|k|v rows back in the whole layer's order).
  void gather_into(nn::Linear& qkv, nn::Linear& projection);

 protected:
  // (B, T, C) replicated -> (B, T, C) replicated (sequence-sharded: (B, T/p, C) each).
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  AttentionNames names_;
  std::vector<int64_t> parts_;  // the rows of q, k and v
  ColumnParallelLinear qkv_;    // rows grouped by rank (rank_groups.h)
  nn::SelfAttention core_;
  RowParallelLinear projection_;
};

// The rows of q, k and v in a packed projection of these heads: H D, G D, G D.
std::vector<int64_t> qkv_parts(const GroupedHeads& heads);

}  // namespace course::parallel
