// The race's budget rule against hand-computed figures: the course's cluster (1800 s on 32
// GPUs, 20 s of validation) measured on one GPU, a measurement on several GPUs, rounding to
// the nearest epoch, and bad budgets refused.
#include "day3_data/race_tools/race_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/errors_and_files.h"

namespace day3 {
namespace {

using ::testing::HasSubstr;

TEST(RaceBudget, TheCoursesClusterFromAOneGpuTest) {
  // 0.5 s a step on one GPU, 2503 batches: 0.5 * 2503 / 32 = 39.109 s, + 20 s = 59.109 s per
  // epoch; 1800 / 59.109 = 30.45 -> 30 epochs.
  const EpochEstimate e = estimate_epochs(cluster_budget(), 0.5, 2503);
  EXPECT_NEAR(e.epoch_s, 59.109375, 1e-9);
  EXPECT_EQ(e.epochs, 30);
}

TEST(RaceBudget, AMeasurementOnSeveralGpusCountsTheirShare) {
  // Measured on 4 GPUs (626 batches each) for a race on 32: 0.5 * 626 / 8 + 20 = 59.125 s.
  RaceBudget budget = cluster_budget();
  budget.gpus = 4;
  EXPECT_NEAR(estimate_epochs(budget, 0.5, 626).epoch_s, 59.125, 1e-9);
}

TEST(RaceBudget, RoundsToTheNearestEpoch) {
  const RaceBudget budget{.budget_s = 100, .race_gpus = 1, .gpus = 1, .validation_s = 0};
  EXPECT_EQ(estimate_epochs(budget, 1, 40).epochs, 3) << "100 / 40 = 2.5 rounds up";
  EXPECT_EQ(estimate_epochs(budget, 1, 41).epochs, 2) << "100 / 41 = 2.44";
  EXPECT_EQ(estimate_epochs(budget, 1, 300).epochs, 0) << "an epoch longer than the budget";
}

TEST(RaceBudget, BadBudgetsAreRefused) {
  for (const RaceBudget& bad : {RaceBudget{0, 1, 1, 0}, RaceBudget{10, 0, 1, 0},
                                RaceBudget{10, 1, 0, 0}, RaceBudget{10, 1, 1, -1}}) {
    EXPECT_THAT(course::testing::error_of([&] { validate(bad); }),
                HasSubstr("--budget-s and --race-gpus must be positive"));
  }
}

}  // namespace
}  // namespace day3
