// Causal self-attention with its heads split over the tensor-parallel ranks (Megatron-LM):
// the q|k|v projection column-parallel (rank r computes the q, k and v of heads
// [r h/p, (r+1) h/p)), attention of those heads on the rank alone, the output projection
// row-parallel (its partial products summed once). Cut from the whole layers every rank built
// from the same seed, so it computes what the whole attention computes.
#pragma once

#include <memory>

#include "common/nn/self_attention.h"
#include "common/parallel/parallel_linear.h"

namespace course::parallel {

class TensorParallelAttention : public nn::Module {
 public:
  // c_attn: (3C, C) q|k|v projection; c_proj: (C, C). Throws when the heads do not split over
  // the ranks. `between`: the input and output whole on every rank or cut along the sequence.
  TensorParallelAttention(const nn::Linear& c_attn, const nn::Linear& c_proj, int64_t heads,
                          std::shared_ptr<Communicator> tp,
                          Activations between = Activations::kReplicated);

  std::vector<Child> children() override;
  RowParallelLinear& projection() { return projection_; }
  // Collective over the tensor-parallel ranks: the whole layers receive every rank's heads (the
  // q|k|v rows back in the whole layer's order).
  void gather_into(nn::Linear& c_attn, nn::Linear& c_proj);

 protected:
  // (B, T, C) replicated -> (B, T, C) replicated (sequence-sharded: (B, T/p, C) each).
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  ColumnParallelLinear qkv_;
  nn::SelfAttention core_;
  RowParallelLinear projection_;
};

// The q|k|v projection with its rows regrouped by rank: [q_0 k_0 v_0 | q_1 k_1 v_1 | ...], where
// q_r are the q rows of rank r's heads, so that rank r's contiguous rows are its heads' q, k, v.
nn::Linear grouped_by_rank(const nn::Linear& c_attn, int ranks);
// The inverse on the rows of a (3C, ...) weight or (3C,) bias: back to [q | k | v].
Tensor ungrouped_qkv_rows(const Tensor& grouped, int ranks);

}  // namespace course::parallel
