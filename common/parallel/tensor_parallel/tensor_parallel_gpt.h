// A GPT (either family) with every block cut over the tensor-parallel ranks (Megatron-LM): the
// embedding over the vocabulary, each block's attention over its heads and its feed-forward block
// as a column-then-row pair (tensor_parallel_block.h), the output layer over the
// vocabulary (on the rank's embedding rows when tied) with its logits gathered; the
// normalisations and the position table replicated. Cut from a whole nn::Gpt every rank built from
// the same seed, with the whole model's parameter names, so it trains as that model does (each rank
// holding a p-th of the large matrices). With sequence parallelism the residual stream and the
// LayerNorms between the tensor-parallel layers are cut along the sequence (sequence_parallel.h).
// Its parts are a GptParts, so pipeline stages can be cut from it (3D parallelism:
// common/parallel/pipeline/pipeline_parallel.h over a TensorParallelGpt). Under context parallelism
// (use_context_parallel) each rank holds its rows of the sequences (common/nn/context_split.h),
// attends through the ring (ring_attention.h) and adds the position rows of its positions.
#pragma once

#include <memory>

#include "common/models/gpt/gpt.h"
#include "common/nn/sequential.h"
#include "common/parallel/tensor_parallel/parallel_linear.h"
#include "common/parallel/tensor_parallel/tensor_parallel_block.h"
#include "common/parallel/tensor_parallel/vocab_parallel_embedding.h"

namespace course::parallel {

class TensorParallelGpt : public nn::GptParts {
 public:
  // Throws when the heads, the feed-forward width or the vocabulary do not split over the ranks,
  // or the whole model checkpoints its blocks. `between`: the activations between the
  // tensor-parallel layers whole on every rank, or cut along the sequence (whose length must
  // then split over the ranks).
  TensorParallelGpt(nn::Gpt& whole, std::shared_ptr<Communicator> tp,
                    Activations between = Activations::kReplicated);

  std::vector<Child> children() override;
  const nn::GptConfig& config() const override { return config_; }
  // The vocabulary-parallel embedding, then (sequence-sharded) this rank's positions of it.
  nn::Module& embedding() override { return *input_; }
  nn::Parameter& token_table() override { return embedding_.wte; }
  nn::Sequential& blocks() override { return blocks_; }
  nn::Module& final_norm() override { return *final_norm_; }
  nn::Module& head() override { return *head_; }

  // Collective over the tensor-parallel ranks: `whole` (a Gpt of the same configuration)
  // receives this model's current values, every cut parameter all-gathered and put back in the
  // whole model's order, so any rank can validate or sample with the whole model.
  void gather_into(nn::Gpt& whole);

  // From now on the tokens are this rank's rows of sequences cut over `cp` (and its targets the
  // same rows), the attention a ring over cp. Every parameter's gradient is then this rank's
  // share: averaged over cp (with the data-parallel replicas) it is the whole batch's. On rotary
  // positions (Llama) each rank turns its rows by their own positions in the window.
  void use_context_parallel(std::shared_ptr<Communicator> cp);

  // The parameters applied to this rank's sequence positions only (the LayerNorms and the
  // row-parallel biases, with sequence parallelism; none without): after a step's backwards their
  // gradients are summed over the tensor-parallel ranks (sum_gradients) to be the whole batch's.
  std::vector<nn::Parameter*> sequence_sharded_parameters();
  // The parameters every rank holds whole (normalisations, row-parallel biases, the position
  // table), with equal gradients on every rank after a step's backwards: the rest is cut.
  std::vector<nn::Parameter*> replicated_parameters();

 protected:
  // tokens (B, T) i32 -> logits (B, T, V), the same on every rank.
  Tensor run_forward(const Tensor& tokens, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dlogits, nn::Context& ctx) override;

 private:
  nn::GptConfig config_;
  std::shared_ptr<Communicator> tp_;
  Activations between_;
  VocabParallelEmbedding embedding_;
  nn::ModulePtr input_;
  nn::Sequential blocks_;
  nn::ModulePtr final_norm_;
  nn::ModulePtr head_;
  std::vector<TensorParallelBlock*> cut_blocks_;
};

}  // namespace course::parallel
