// Day 4 exercises TP4.6-TP4.8 and TP4.18, pipeline and context parallelism (the lab sheet is
// day4_large_models/README.md). solutions/day4_large_models/pipeline_exercises.cc is the complete
// version; day4_large_models/pipeline_exercises.cc is generated from it by tools/labgen with
// every exercise replaced by a stub: trainees edit that one.
#include "day4_large_models/pipeline_exercises.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/core/exercise.h"

namespace day4 {

using Kind = parallel::PipelineAction::Kind;

std::vector<int64_t> balanced_stages(const nn::PartCosts& costs, int stages) {
  // BEGIN EXERCISE TP4.6: the cheapest limit on a stage's cost that a greedy fill meets
  ::course::exercise_todo("TP4.6", "the cheapest limit on a stage's cost that a greedy fill meets",
                          "day4_large_models/README.md#tp46");
  // END EXERCISE
}

std::vector<parallel::PipelineAction> stage_actions(parallel::PipelineSchedule schedule, int stage,
                                                    int stages, int micro_batches) {
  std::vector<parallel::PipelineAction> actions;
  // BEGIN EXERCISE TP4.7: GPipe, then 1F1B's warm-up, steady state and cool-down
  ::course::exercise_todo("TP4.7", "GPipe, then 1F1B's warm-up, steady state and cool-down",
                          "day4_large_models/README.md#tp47");
  // END EXERCISE
  return actions;
}

void exchange_with_neighbours(parallel::RoundTraffic& traffic, parallel::Communicator& pp) {
  // BEGIN EXERCISE TP4.8: the round's sends and receives with both neighbours in one group
  ::course::exercise_todo("TP4.8",
                          "the round's sends and receives with both neighbours in one group",
                          "day4_large_models/README.md#tp48");
  // END EXERCISE
}

PartialAttention merge_partial_attention(const PartialAttention& a, const PartialAttention& b) {
  for (const Tensor* t : {&a.out, &a.lse, &b.out, &b.lse}) {
    COURSE_CHECK(t->dtype() == course::DType::kF32 && t->device().is_cpu() &&
                     t->memory_format() == course::MemoryFormat::kContiguous,
                 "merge_partial_attention takes contiguous f32 CPU tensors, got ", t->str());
  }
  const int64_t n = a.out.dim() == 2 ? a.out.size(0) : -1, d = n < 0 ? -1 : a.out.size(1);
  COURSE_CHECK(n >= 0 && a.out.shape() == b.out.shape() && a.lse.shape() == course::Shape({n}) &&
                   b.lse.shape() == course::Shape({n}),
               "partial attention results to merge must be (n, d) and (n,) alike, got ",
               a.out.str(), " ", a.lse.str(), " and ", b.out.str(), " ", b.lse.str());
  PartialAttention merged{Tensor::empty({n, d}), Tensor::empty({n})};
  // BEGIN EXERCISE TP4.18: rescale both by their share of the larger log-sum-exp, then add
  ::course::exercise_todo("TP4.18",
                          "rescale both by their share of the larger log-sum-exp, then add",
                          "day4_large_models/README.md#tp418");
  // END EXERCISE
  return merged;
}

parallel::PipelineHooks pipeline_exercise_hooks() {
  return {.cut = balanced_stages, .actions = stage_actions, .exchange = exchange_with_neighbours};
}

}  // namespace day4
