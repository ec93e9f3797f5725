// Cutting a group at the persistence threshold, and driving its two units together.
#include "common/parallel/data_parallel/sharded_group.h"

namespace course::parallel {

std::pair<std::vector<nn::Parameter*>, std::vector<nn::Parameter*>> split_at_persistence(
    const std::vector<nn::Parameter*>& params, int64_t threshold) {
  std::pair<std::vector<nn::Parameter*>, std::vector<nn::Parameter*>> split;
  for (nn::Parameter* p : params) {
    (persists(p->value.numel(), threshold) ? split.second : split.first).push_back(p);
  }
  return split;
}

ShardedGroup::ShardedGroup(const std::vector<nn::Parameter*>& params, const ShardGroups& groups,
                           const ShardingOptions& options) {
  const auto [above, below] =
      split_at_persistence(params, options.communication.persistence_threshold);
  const auto make = [&](const std::vector<nn::Parameter*>& part) {
    return part.empty() ? nullptr
                        : std::make_unique<ShardedUnit>(part, groups, options.cpu_offload,
                                                        options.param_dtype);
  };
  released_ = make(above);
  persistent_ = make(below);
}

std::vector<std::pair<std::string, ShardedUnit*>> ShardedGroup::named_units(
    const std::string& name) {
  std::vector<std::pair<std::string, ShardedUnit*>> out;
  if (released_) out.emplace_back(name, released_.get());
  if (persistent_) out.emplace_back(name + kPersistentSuffix, persistent_.get());
  return out;
}

void ShardedGroup::gather() {
  if (released_) released_->gather();
  if (persistent_) persistent_->gather();
}

void ShardedGroup::release() {
  if (released_) released_->release();
}

void ShardedGroup::allocate_gradients() {
  if (released_) released_->allocate_gradients();
  if (persistent_) persistent_->allocate_gradients();
}

void ShardedGroup::reduce_in(ReductionBuckets& reductions) {
  if (released_) reductions.add(*released_);
  if (persistent_) reductions.add(*persistent_);
}

}  // namespace course::parallel
