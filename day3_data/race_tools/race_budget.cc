// The race's budget rule.
#include "day3_data/race_tools/race_budget.h"

#include <cmath>

#include "common/core/error.h"
#include "common/core/format.h"

namespace day3 {

RaceBudget cluster_budget(int gpus) {
  return {.budget_s = 1800, .race_gpus = 32, .gpus = gpus, .validation_s = 20};
}

RaceBudget cpu_budget(int ranks) {
  return {.budget_s = 900, .race_gpus = ranks, .gpus = ranks, .validation_s = 3};
}

EpochEstimate estimate_epochs(const RaceBudget& b, double step_s, int64_t n_batches) {
  EpochEstimate e{.step_s = step_s, .n_batches = n_batches};
  const double share = static_cast<double>(b.race_gpus) / b.gpus;
  e.epoch_s = step_s * static_cast<double>(n_batches) / share + b.validation_s;
  e.epochs = std::llround(b.budget_s / e.epoch_s);
  return e;
}

void validate(const RaceBudget& b) {
  COURSE_CHECK(b.budget_s > 0 && b.race_gpus > 0 && b.gpus > 0 && b.validation_s >= 0,
               "the race's --budget-s and --race-gpus must be positive, the measuring run's GPUs "
               "at least 1 and --validation-s at least 0");
}

std::string describe(const RaceBudget& b) {
  return course::format_number(b.budget_s) + " s on " + std::to_string(b.race_gpus) + " GPU(s), " +
         course::format_number(b.validation_s) + " s of validation per epoch";
}

}  // namespace day3
