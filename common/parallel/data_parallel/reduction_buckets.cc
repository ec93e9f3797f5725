// Launching a sharded backward pass's reductions bucket by bucket.
#include "common/parallel/data_parallel/reduction_buckets.h"

namespace course::parallel {

ReductionBuckets::ReductionBuckets(const ZeroCommunication& options, bool keep_full_gradients)
    : options_(options), keep_full_gradients_(keep_full_gradients) {}

void ReductionBuckets::add(ShardedUnit& unit) {
  waiting_.push_back(&unit);
  waiting_elements_ += unit.padded_numel();
  if (waiting_elements_ >= options_.reduce_bucket_elements) launch();
}

void ReductionBuckets::launch() {
  const GradientReduction how =
      options_.reduce_scatter ? GradientReduction::kReduceScatter : GradientReduction::kAllReduce;
  for (ShardedUnit* unit : waiting_) unit->reduce_gradients(keep_full_gradients_, how);
  // The bucket before this one reduced while backward computed this one's gradients: complete
  // it now that this one is on its way.
  for (ShardedUnit* unit : in_flight_) unit->finish_reduction();
  in_flight_ = std::move(waiting_);
  waiting_.clear();
  waiting_elements_ = 0;
  if (!options_.overlap) complete_in_flight();
}

void ReductionBuckets::complete_in_flight() {
  for (ShardedUnit* unit : in_flight_) unit->finish_reduction();
  in_flight_.clear();
}

void ReductionBuckets::finish() {
  if (!waiting_.empty()) launch();
  complete_in_flight();
}

}  // namespace course::parallel
