// The learning-rate finder's exercises in `bazel test //day3_data:check`, on hand-worked cases:
//   TP3.6:  log-spaced rates (decades, both ends included, two rates, a non-decade ratio);
//   TP3.7: the suggestion (a tenth of the lowest loss's rate, NaNs left out even first, the
//           lower rate on a tie, none when nothing was measured, rates not a decade apart).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "day3_data/exercises.h"

namespace day3 {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void expect_rates(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size()) << "TP3.6: one rate per count";
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5 * expected[i]) << "TP3.6: rate " << i;
  }
}

TEST(TP3_6SweepRates, DecadesFromFirstToLastBothIncluded) {
  expect_rates(sweep_rates(1e-8f, 10.0f, 10),
               {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10});
  expect_rates(sweep_rates(1e-3f, 1.0f, 4), {1e-3, 1e-2, 1e-1, 1});
}

TEST(TP3_6SweepRates, TwoRatesAreTheEnds) { expect_rates(sweep_rates(0.5f, 8.0f, 2), {0.5, 8}); }

TEST(TP3_6SweepRates, EqualRatiosBetweenNeighbours) {
  // 1e-4 to 1 in 9 rates: each sqrt(10) times the one before.
  const std::vector<float> rates = sweep_rates(1e-4f, 1.0f, 9);
  expect_rates(rates, {1e-4, 3.16228e-4, 1e-3, 3.16228e-3, 1e-2, 3.16228e-2, 0.1, 0.316228, 1});
}

const std::vector<float> kRates = {1e-4f, 3.16228e-4f, 1e-3f, 3.16228e-3f, 1e-2f, 3.16228e-2f};

TEST(TP3_7SuggestRate, ATenthOfTheLowestLossRate) {
  const std::optional<float> rate = suggest_rate(kRates, {2.3, 2.2, 1.9, 1.4, 1.1, 1.6});
  ASSERT_TRUE(rate) << "TP3.7: a rate was measured";
  EXPECT_NEAR(*rate, 1e-3, 1e-9) << "TP3.7: a tenth of 0.01, where the loss is lowest (not the "
                                    "rate before it in the sweep, nor the rate itself)";
}

TEST(TP3_7SuggestRate, NotMeasuredRatesAreLeftOut) {
  const std::optional<float> first_nan = suggest_rate(kRates, {kNaN, 2.2, 1.9, 1.4, 1.5, kNaN});
  ASSERT_TRUE(first_nan);
  EXPECT_NEAR(*first_nan, 3.16228e-4, 1e-9) << "TP3.7: a NaN loss is not the lowest";
  const std::optional<float> diverged = suggest_rate(kRates, {2.3, 2.0, 1.8, kNaN, kNaN, kNaN});
  ASSERT_TRUE(diverged);
  EXPECT_NEAR(*diverged, 1e-4, 1e-9) << "TP3.7: diverged rates are left out";
}

TEST(TP3_7SuggestRate, TheLowerRateWinsATie) {
  const std::optional<float> rate = suggest_rate(kRates, {2.3, 1.0, 1.0, 1.2, 1.4, 1.6});
  ASSERT_TRUE(rate);
  EXPECT_NEAR(*rate, 3.16228e-5, 1e-10) << "TP3.7: on a tie the lower rate is the safer one";
}

TEST(TP3_7SuggestRate, NoneWhenNothingWasMeasured) {
  EXPECT_FALSE(suggest_rate(kRates, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}))
      << "TP3.7: no measured rate, no suggestion";
}

}  // namespace
}  // namespace day3
