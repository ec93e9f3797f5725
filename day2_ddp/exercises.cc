// Day 2 exercises TP2.1-TP2.5 (the lab sheet is day2_ddp/README.md).
// solutions/day2_ddp/exercises.cc is the complete version; day2_ddp/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day2_ddp/exercises.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/core/exercise.h"
#include "common/data/permutation.h"
#include "common/kernels/elementwise.h"

namespace day2 {

std::vector<int64_t> rank_indices(const SamplerOptions& options, int rank, int world_size,
                                  int64_t epoch) {
  // BEGIN EXERCISE TP2.1: this rank's share of the epoch's (padded or cut) order
  ::course::exercise_todo("TP2.1", "this rank's share of the epoch's (padded or cut) order",
                          "day2_ddp/README.md#tp21");
  // END EXERCISE
}

void allreduce_gradients(const std::vector<nn::Parameter*>& params, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP2.2: one all-reduce per gradient, then the average over the ranks
  ::course::exercise_todo("TP2.2", "one all-reduce per gradient, then the average over the ranks",
                          "day2_ddp/README.md#tp22");
  // END EXERCISE
}

parallel::BucketPlan plan_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes,
                                  int64_t first_cap_bytes) {
  // BEGIN EXERCISE TP2.3: reverse order; close a bucket once it reaches its cap
  ::course::exercise_todo("TP2.3", "reverse order; close a bucket once it reaches its cap",
                          "day2_ddp/README.md#tp23");
  // END EXERCISE
}

void ring_allreduce(Tensor& data, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP2.4: reduce-scatter then all-gather around the ring, one exchange a step
  ::course::exercise_todo("TP2.4",
                          "reduce-scatter then all-gather around the ring, one exchange a step",
                          "day2_ddp/README.md#tp24");
  // END EXERCISE
}

float large_batch_lr(int64_t step, const LargeBatchSchedule& s) {
  // BEGIN EXERCISE TP2.5: linear scaling rule, linear warm-up from base_lr, then cosine to 0
  ::course::exercise_todo("TP2.5",
                          "linear scaling rule, linear warm-up from base_lr, then cosine to 0",
                          "day2_ddp/README.md#tp25");
  // END EXERCISE
}

}  // namespace day2
