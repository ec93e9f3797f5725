// A group of parameters sharded together (a block's, or the root's) as DeepSpeed's ZeRO-3 cuts
// it: the tensors above stage3_param_persistence_threshold form the unit the strategy frees
// between uses, those at or below it (biases, LayerNorms: many small gathers for few bytes)
// a persistent unit that stays gathered and is refreshed after each step as in ZeRO-2. Either
// unit may be absent; with a threshold of 0 every tensor is in the first.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/parallel/data_parallel/reduction_buckets.h"
#include "common/parallel/data_parallel/sharded_unit.h"
#include "common/parallel/data_parallel/sharding.h"

namespace course::parallel {

// Whether DeepSpeed keeps a tensor of `numel` elements gathered under this threshold.
inline bool persists(int64_t numel, int64_t threshold) { return numel <= threshold; }

// `params` cut at the threshold, in their order: (above it, at or below it).
std::pair<std::vector<nn::Parameter*>, std::vector<nn::Parameter*>> split_at_persistence(
    const std::vector<nn::Parameter*>& params, int64_t threshold);

// The suffix of a persistent unit's name: block "3" is units "3" and "3.persistent".
inline constexpr const char* kPersistentSuffix = ".persistent";

class ShardedGroup {
 public:
  // Collective over groups.world, as ShardedUnit's constructor.
  ShardedGroup(const std::vector<nn::Parameter*>& params, const ShardGroups& groups,
               const ShardingOptions& options);

  ShardedUnit* released() { return released_.get(); }      // freed as the strategy says
  ShardedUnit* persistent() { return persistent_.get(); }  // always gathered
  // (name, unit) for each unit present: `name` and name + kPersistentSuffix.
  std::vector<std::pair<std::string, ShardedUnit*>> named_units(const std::string& name);

  void gather();   // both units' full values bound
  void release();  // the released unit's full values freed (the persistent unit keeps its own)
  void allocate_gradients();
  void reduce_in(ReductionBuckets& reductions);  // both units' gradients, once complete

 private:
  std::unique_ptr<ShardedUnit> released_, persistent_;
};

}  // namespace course::parallel
