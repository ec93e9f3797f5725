// Cutting a transformer block over the tensor-parallel ranks, and gathering it back.
#include "common/parallel/tensor_parallel/tensor_parallel_block.h"

#include "common/kernels/elementwise.h"
#include "common/nn/residual_branch.h"
#include "common/parallel/tensor_parallel/rank_groups.h"

namespace course::parallel {

void copy_parameters(nn::Module& to, nn::Module& from) {
  const std::vector<nn::Parameter*> mine = to.parameters(), theirs = from.parameters();
  for (size_t i = 0; i < mine.size(); ++i) copy_(mine[i]->value, theirs[i]->value);
}

nn::ModulePtr norm_copy(nn::DecoderFamily family, nn::Module& whole) {
  const Tensor& weight = whole.parameters().front()->value;
  nn::ModulePtr copy = nn::make_norm(family, weight.size(0), weight.device());
  copy_parameters(*copy, whole);
  return copy;
}

TensorParallelBlock::TensorParallelBlock(const nn::GptBlockLayers& whole,
                                         const nn::BlockShape& shape,
                                         std::shared_ptr<Communicator> tp, Activations between)
    : ranks_(tp->size()), expansion_parts_(nn::expansion_parts(shape)) {
  const nn::BlockNames& names = nn::block_names(shape.family);
  auto attention_branch = std::make_unique<nn::Sequential>();
  attention_norm_ = &attention_branch->add_named(norm_copy(shape.family, *whole.attention_norm),
                                                 names.attention_norm);
  attention_ = &attention_branch->add_named(
      std::make_unique<TensorParallelAttention>(*whole.qkv, *whole.attention_projection,
                                                shape.heads, shape.causal, tp, between,
                                                AttentionNames{names.qkv, names.projection}),
      "attn");

  auto parallel_mlp = std::make_unique<nn::Sequential>();
  expansion_ =
      &parallel_mlp->add_named(std::make_unique<ColumnParallelLinear>(
                                   grouped_by_rank(*whole.expansion, expansion_parts_, ranks_), tp,
                                   /*gather_output=*/false, between),
                               names.expansion);
  parallel_mlp->add(nn::make_activation(shape.family), names.activation);
  feed_forward_projection_ = &parallel_mlp->add_named(
      std::make_unique<RowParallelLinear>(*whole.feed_forward_projection, tp, between),
      names.feed_forward_projection);
  auto feed_forward_branch = std::make_unique<nn::Sequential>();
  feed_forward_norm_ = &feed_forward_branch->add_named(
      norm_copy(shape.family, *whole.feed_forward_norm), names.feed_forward_norm);
  feed_forward_branch->add(std::move(parallel_mlp), "mlp");

  add(std::make_unique<nn::ResidualBranch>(std::move(attention_branch)), "attention");
  add(std::make_unique<nn::ResidualBranch>(std::move(feed_forward_branch)), "feed_forward");
}

void TensorParallelBlock::gather_into(const nn::GptBlockLayers& whole) {
  copy_parameters(*whole.attention_norm, *attention_norm_);
  attention_->gather_into(*whole.qkv, *whole.attention_projection);
  copy_parameters(*whole.feed_forward_norm, *feed_forward_norm_);
  expansion_->gather_into(*whole.expansion);  // grouped by rank
  Tensor& expansion = whole.expansion->weight.value;
  copy_(expansion, rows_ungrouped(expansion.clone(), expansion_parts_, ranks_));
  if (whole.expansion->bias) {
    Tensor& bias = whole.expansion->bias->value;
    copy_(bias, rows_ungrouped(bias.clone(), expansion_parts_, ranks_));
  }
  feed_forward_projection_->gather_into(*whole.feed_forward_projection);
}

std::vector<nn::Parameter*> TensorParallelBlock::position_wise_parameters() {
  std::vector<nn::Parameter*> out = attention_norm_->parameters();
  if (attention_->projection().bias) out.push_back(&*attention_->projection().bias);
  for (nn::Parameter* p : feed_forward_norm_->parameters()) out.push_back(p);
  if (feed_forward_projection_->bias) out.push_back(&*feed_forward_projection_->bias);
  return out;
}

}  // namespace course::parallel
