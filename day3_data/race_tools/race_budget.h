// The race's budget rule (the course's "eligible to run X epochs"): a short --test run on
// `gpus` GPUs measures the step (loading included); the race gives every entry `race_gpus`
// GPUs for `budget_s` seconds, with `validation_s` of validation per epoch, so
//   epochs = round(budget_s / ((step_s + load_s) * n_batches / (race_gpus / gpus) + validation_s))
// where n_batches is an epoch's batches on the measuring run's GPUs.
#pragma once

#include <cstdint>
#include <string>

namespace day3 {

struct RaceBudget {
  double budget_s = 0;
  int race_gpus = 0;  // GPUs (ranks) of an entry in the race
  int gpus = 0;       // GPUs (ranks) of the measuring run
  double validation_s = 0;
};

// The cluster's budget for a measuring run on `gpus` GPUs (the course's: 30 minutes on 32 GPUs,
// 20 s of validation) and this CPU's for one on `ranks` processes: 15 minutes on those same
// processes (the reference recipe's 10 epochs fit on one), 3 s of validation (the small network
// on Fashion-MNIST's 10,000 test images, measured here).
RaceBudget cluster_budget(int gpus = 1);
RaceBudget cpu_budget(int ranks = 1);

struct EpochEstimate {
  double step_s = 0;      // a step, loading included, on the measuring run
  int64_t n_batches = 0;  // an epoch's batches on the measuring run
  double epoch_s = 0;     // an epoch in the race, validation included
  int64_t epochs = 0;     // what the budget allows
};

EpochEstimate estimate_epochs(const RaceBudget& budget, double step_s, int64_t n_batches);

void validate(const RaceBudget& budget);  // positive values; throws course::Error

std::string describe(const RaceBudget& budget);

}  // namespace day3
