// The gradient reductions of a sharded backward pass, launched in DeepSpeed's buckets
// (zero_optimization's reduce_bucket_size, overlap_comm): a block's full gradients, once its
// backward is done, wait until the waiting blocks hold `reduce_bucket_elements` gradient
// elements, then every waiting block's reduction launches together; the end of backward
// launches what is left. A bucket in flight is completed when the next one launches, so at most
// two buckets hold full gradients (DeepSpeed's double buffer); without overlap each bucket is
// completed as it launches, before backward goes on.
#pragma once

#include <vector>

#include "common/parallel/data_parallel/sharded_unit.h"
#include "common/parallel/data_parallel/sharding.h"

namespace course::parallel {

class ReductionBuckets {
 public:
  // `keep_full_gradients`: ZeRO-1 keeps each unit's full gradients bound after its reduction.
  ReductionBuckets(const ZeroCommunication& options, bool keep_full_gradients);
  // `unit`'s full gradients are complete for this backward pass.
  void add(ShardedUnit& unit);
  // The end of backward: launches what waits and completes every reduction.
  void finish();

 private:
  void launch();
  void complete_in_flight();

  ZeroCommunication options_;
  bool keep_full_gradients_;
  std::vector<ShardedUnit*> waiting_, in_flight_;
  int64_t waiting_elements_ = 0;
};

}  // namespace course::parallel
