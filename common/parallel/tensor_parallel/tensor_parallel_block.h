// One transformer block (common/nn/transformer_blocks.h: the GPT's, the Llama's, the Vision
// Transformer's) cut over the tensor-parallel ranks (Megatron-LM): its normalisations copied
// whole, attention over its query and key/value heads (tensor_parallel_attention.h), the
// feed-forward block as a column-then-row pair (a SwiGLU's gate and up cut alike: one all-reduce
// each way). Built from the whole block's layers, every rank's from the same seed, under the whole
// block's names, so a model of such blocks trains as the whole one does; and gathered back into
// them. With sequence parallelism the normalisations see this rank's positions only.
#pragma once

#include <memory>
#include <vector>

#include "common/nn/sequential.h"
#include "common/nn/transformer_blocks.h"
#include "common/parallel/tensor_parallel/parallel_linear.h"
#include "common/parallel/tensor_parallel/tensor_parallel_attention.h"

namespace course::parallel {

class TensorParallelBlock : public nn::Sequential {
 public:
  // Throws when the heads or the feed-forward width do not split over the ranks.
  TensorParallelBlock(const nn::GptBlockLayers& whole, const nn::BlockShape& shape,
                      std::shared_ptr<Communicator> tp, Activations between);

  // Collective over the tensor-parallel ranks: `whole` (the layers this block was cut from, or
  // a block of the same shape) receives every rank's slices, in the whole layers' order.
  void gather_into(const nn::GptBlockLayers& whole);
  // The normalisations and the row-parallel biases: whole on every rank, and applied to this
  // rank's sequence positions only when the activations between are cut along the sequence.
  std::vector<nn::Parameter*> position_wise_parameters();
  TensorParallelAttention& attention() { return *attention_; }

 private:
  int ranks_;
  std::vector<int64_t> expansion_parts_;  // {F}, or SwiGLU's gate and up {F, F}
  nn::Module* attention_norm_;
  TensorParallelAttention* attention_;
  nn::Module* feed_forward_norm_;
  ColumnParallelLinear* expansion_;  // its rows grouped by rank (rank_groups.h)
  RowParallelLinear* feed_forward_projection_;
};

// `to` receives `from`'s parameter values (two modules of the same parameters: normalisations).
void copy_parameters(nn::Module& to, nn::Module& from);
// A copy of a whole normalisation of `family`.
nn::ModulePtr norm_copy(nn::DecoderFamily family, nn::Module& whole);

}  // namespace course::parallel
