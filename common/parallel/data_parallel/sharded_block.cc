// Gather before use, reduce after backward, free as the strategy says.
#include "common/parallel/data_parallel/sharded_block.h"

namespace course::parallel {

ShardedBlock::ShardedBlock(nn::ModulePtr inner, const ShardGroups& groups,
                           const ShardingOptions& options)
    : inner_(std::move(inner)),
      unit_(inner_->parameters(), groups, options.cpu_offload, options.param_dtype),
      options_(options),
      policy_(policy_of(options.sharding)) {
  if (policy_.keep_full_gradients) unit_.allocate_gradients();
  for (nn::Parameter* p : inner_->parameters()) {
    p->released_between_passes = policy_.reshard_after_forward;
  }
}

void ShardedBlock::set_neighbours(ShardedBlock* previous, ShardedBlock* next,
                                  ReductionBuckets* reductions) {
  previous_ = previous;
  next_ = next;
  reductions_ = reductions;
}

Tensor ShardedBlock::run_forward(const Tensor& x, nn::Context& ctx) {
  unit_.gather();
  if (options_.forward_prefetch && next_) next_->unit_.start_gather();
  Tensor y = inner_->forward(x, ctx.child(0));
  if (policy_.reshard_after_forward) unit_.release();
  return y;
}

Tensor ShardedBlock::run_backward(const Tensor& dy, nn::Context& ctx) {
  unit_.gather();
  const bool prefetch = previous_ && policy_.reshard_after_forward;
  if (prefetch && options_.backward_prefetch == BackwardPrefetch::kPre) {
    previous_->unit_.start_gather();
  }
  unit_.allocate_gradients();
  Tensor dx = inner_->backward(dy, ctx.child(0));
  reductions_->add(unit_);
  if (prefetch && options_.backward_prefetch == BackwardPrefetch::kPost) {
    previous_->unit_.start_gather();
  }
  if (policy_.reshard_after_backward) unit_.release();
  return dx;
}

}  // namespace course::parallel
