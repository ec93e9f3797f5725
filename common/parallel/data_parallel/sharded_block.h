// A block of sharded data parallelism (FSDP's wrapped module): a module whose parameters are
// one ShardedGroup (its freed unit, and with DeepSpeed's persistence threshold a persistent
// one). Forward gathers the full values (and frees them after, with zero3); backward gathers
// them again if they were freed, lets the module add its gradients into fresh full gradients,
// and hands them to the pass's reduction buckets (reduction_buckets.h), which reduce them into
// this rank's shards. Other blocks' all-gathers are launched early (prefetch): FSDP's
// neighbouring block as the options say, or DeepSpeed's stage-3 prefetch (stage3_prefetch.h).
#pragma once

#include <memory>

#include "common/nn/module.h"
#include "common/parallel/data_parallel/reduction_buckets.h"
#include "common/parallel/data_parallel/sharded_group.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/parallel/data_parallel/stage3_prefetch.h"

namespace course::parallel {

class ShardedBlock : public nn::Module {
 public:
  // Collective over groups.world (the units' construction broadcasts rank 0's values).
  ShardedBlock(nn::ModulePtr inner, const ShardGroups& groups, const ShardingOptions& options);
  std::vector<Child> children() override { return {{"", inner_.get()}}; }
  ShardedGroup& units() { return units_; }

  // Where the block runs among the others: the blocks before and after it in forward order
  // (null at the ends), the buckets its gradients are reduced in, and with DeepSpeed's
  // prefetch the walk ahead and this block's place in it.
  struct Neighbours {
    ShardedBlock* previous = nullptr;
    ShardedBlock* next = nullptr;
    ReductionBuckets* reductions = nullptr;
    Stage3Prefetch* stage3 = nullptr;
    size_t index = 0;
  };
  void set_neighbours(const Neighbours& neighbours) { neighbours_ = neighbours; }

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  void start_gather_of(ShardedBlock* block);

  nn::ModulePtr inner_;
  ShardedGroup units_;
  ShardingOptions options_;
  ShardingPolicy policy_;
  Neighbours neighbours_;
};

}  // namespace course::parallel
