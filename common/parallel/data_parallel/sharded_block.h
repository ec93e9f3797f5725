// A block of sharded data parallelism (FSDP's wrapped module): a module whose parameters are
// one ShardedUnit. Forward gathers the full values (and frees them after, with zero3); backward
// gathers them again if they were freed, lets the module add its gradients into fresh full
// gradients, and hands them to the pass's reduction buckets (reduction_buckets.h), which reduce
// them into this rank's shard. Neighbouring blocks' all-gathers are launched early (prefetch) as
// the options say.
#pragma once

#include <memory>

#include "common/nn/module.h"
#include "common/parallel/data_parallel/reduction_buckets.h"
#include "common/parallel/data_parallel/sharded_unit.h"
#include "common/parallel/data_parallel/sharding.h"

namespace course::parallel {

class ShardedBlock : public nn::Module {
 public:
  // Collective over groups.world (the unit's construction broadcasts rank 0's values).
  ShardedBlock(nn::ModulePtr inner, const ShardGroups& groups, const ShardingOptions& options);
  std::vector<Child> children() override { return {{"", inner_.get()}}; }
  ShardedUnit& unit() { return unit_; }
  // The blocks that run before and after this one in forward order (null at the ends), and the
  // buckets its gradients are reduced in.
  void set_neighbours(ShardedBlock* previous, ShardedBlock* next, ReductionBuckets* reductions);

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  nn::ModulePtr inner_;
  ShardedUnit unit_;
  ShardingOptions options_;
  ShardingPolicy policy_;
  ShardedBlock* previous_ = nullptr;
  ShardedBlock* next_ = nullptr;
  ReductionBuckets* reductions_ = nullptr;
};

}  // namespace course::parallel
