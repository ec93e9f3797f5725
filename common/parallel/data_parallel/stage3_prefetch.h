// DeepSpeed's ZeRO-3 prefetch (zero_optimization's stage3_prefetch_bucket_size and
// stage3_max_live_parameters), read from deepspeed/runtime/zero/partitioned_param_coordinator.py
// (fetch_sub_module): once a block's values are there, the blocks after it in the pass's order
// (before it, in backward) have their all-gathers launched, skipping those already there or in
// flight, while fewer elements than
//     min(prefetch bucket, max live - elements already live)
// are being prefetched; the check comes before each block, so one larger than the bucket still
// goes alone. Elements are DeepSpeed's: a unit's parameters, without the shards' padding, and
// "live" counts every gathered unit and every gather in flight. DeepSpeed walks a trace of the
// whole step, into the next pass; the course's walk stays within the pass.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/parallel/data_parallel/sharded_unit.h"
#include "common/parallel/data_parallel/sharding.h"

namespace course::parallel {

// The walk on sizes alone (the memory estimate's too): from block `index` in the pass's
// direction, the blocks whose gathers it launches, given each block's elements, which blocks'
// values are there or in flight, and the elements live.
struct PrefetchBudget {
  int64_t bucket_elements = 0;
  int64_t max_live_elements = 0;
};
// The budget the options set: none unless stage3_prefetch_bucket_size is.
std::optional<PrefetchBudget> stage3_budget(const ZeroCommunication& communication);

std::vector<size_t> stage3_prefetch_walk(const std::vector<int64_t>& elements,
                                         const std::vector<bool>& held, int64_t live, size_t index,
                                         bool forward, PrefetchBudget budget);

class Stage3Prefetch {
 public:
  // `blocks`: each block's freed unit in forward order (null for a block wholly persistent);
  // `live`: every unit that can hold full values, the root's and the persistent ones included.
  Stage3Prefetch(PrefetchBudget budget, std::vector<ShardedUnit*> blocks,
                 std::vector<ShardedUnit*> live);

  // Block `index`'s values are there: launch the prefetch of the blocks it is followed by in
  // this pass (forward: index + 1, ...; backward: index - 1, ...).
  void after_fetch(size_t index, bool forward);

 private:
  int64_t live_elements() const;

  PrefetchBudget budget_;
  std::vector<ShardedUnit*> blocks_, live_;
};

}  // namespace course::parallel
