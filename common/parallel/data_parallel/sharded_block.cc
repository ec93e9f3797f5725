// Gather before use, reduce after backward, free as the strategy says.
#include "common/parallel/data_parallel/sharded_block.h"

namespace course::parallel {

ShardedBlock::ShardedBlock(nn::ModulePtr inner, const ShardGroups& groups,
                           const ShardingOptions& options)
    : inner_(std::move(inner)),
      units_(inner_->parameters(), groups, options),
      options_(options),
      policy_(policy_of(options.sharding)) {
  if (policy_.keep_full_gradients) units_.allocate_gradients();
  const int64_t threshold = options.communication.persistence_threshold;
  for (nn::Parameter* p : inner_->parameters()) {
    p->released_between_passes =
        policy_.reshard_after_forward && !persists(p->value.numel(), threshold);
  }
}

void ShardedBlock::start_gather_of(ShardedBlock* block) {
  if (block && block->units_.released()) block->units_.released()->start_gather();
}

Tensor ShardedBlock::run_forward(const Tensor& x, nn::Context& ctx) {
  units_.gather();
  if (neighbours_.stage3) {
    neighbours_.stage3->after_fetch(neighbours_.index, /*forward=*/true);
  } else if (options_.forward_prefetch) {
    start_gather_of(neighbours_.next);
  }
  Tensor y = inner_->forward(x, ctx.child(0));
  if (policy_.reshard_after_forward) units_.release();
  return y;
}

Tensor ShardedBlock::run_backward(const Tensor& dy, nn::Context& ctx) {
  units_.gather();
  const bool fsdp_prefetch = !neighbours_.stage3 && policy_.reshard_after_forward;
  if (neighbours_.stage3) {
    neighbours_.stage3->after_fetch(neighbours_.index, /*forward=*/false);
  } else if (fsdp_prefetch && options_.backward_prefetch == BackwardPrefetch::kPre) {
    start_gather_of(neighbours_.previous);
  }
  units_.allocate_gradients();
  Tensor dx = inner_->backward(dy, ctx.child(0));
  units_.reduce_in(*neighbours_.reductions);
  if (fsdp_prefetch && options_.backward_prefetch == BackwardPrefetch::kPost) {
    start_gather_of(neighbours_.previous);
  }
  if (policy_.reshard_after_backward) units_.release();
  return dx;
}

}  // namespace course::parallel
