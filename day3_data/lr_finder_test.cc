// The learning-rate finder end to end on small synthetic data (with the solutions linked in):
//   - a decorrelated rate's loss is that of a lone run of the lab at that constant rate;
//   - the correlated sweep's first rate is the decorrelated sweep's first rate (the same fresh
//     model, data and steps), later rates differ (the model carries over);
//   - a rate too high ends the sweep: one rate diverged, the rest not run, the suggestion from
//     the measured ones, the CSV and PNG written;
//   - bad input is one clear error.
#include "day3_data/lr_finder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing/errors_and_files.h"
#include "day3_data/trainer.h"

namespace day3 {
namespace {

using course::testing::error_of;
using course::testing::temp_path;
using ::testing::HasSubstr;

LabOptions sweep(FindLrMode mode, float lr, const std::string& plot) {
  LabOptions o;
  o.synthetic = 64;
  o.batch_size = 16;
  o.device = course::parse_device_request("cpu");
  o.progress = false;
  o.num_workers = 1;
  o.findlr = true;
  o.findlr_mode = mode;
  o.findlr_start = 1e-3f;
  o.lr = lr;
  o.findlr_rates = 3;
  o.findlr_steps = 5;
  o.findlr_plot = temp_path(plot);
  return o;
}

// The mean training loss of a lone lab run of `steps` steps at the constant rate `lr`.
double lone_run_loss(const LabOptions& sweep_options, float lr, int64_t steps) {
  LabOptions o = sweep_options;
  o.findlr = false;
  o.test = true;
  o.test_nsteps = steps;
  o.epochs = steps;
  o.schedule = course::optim::ScheduleKind::kConstant;
  o.lr = lr;
  double sum = 0;
  run_lab(o, {.after_step = [&](int64_t, float loss) { sum += loss; }});
  return sum / static_cast<double>(steps);
}

TEST(LrFinder, DecorrelatedRatesAreLoneRunsAtThoseRates) {
  const LabOptions o = sweep(FindLrMode::kDecorrelated, 0.1f, "decorrelated.png");
  const LrSweep result = find_lr(o);
  ASSERT_EQ(result.points.size(), 3u);
  const std::vector<float> expected_rates = {1e-3f, 1e-2f, 1e-1f};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(result.points[i].lr, expected_rates[i], 1e-6 * expected_rates[i]);
    ASSERT_EQ(result.points[i].outcome, RateOutcome::kMeasured) << "rate " << i;
    EXPECT_NEAR(result.points[i].mean_loss, lone_run_loss(o, result.points[i].lr, 5), 1e-6)
        << "rate " << i;
  }
}

TEST(LrFinder, CorrelatedStartsLikeDecorrelatedThenCarriesTheModelOver) {
  const LrSweep correlated = find_lr(sweep(FindLrMode::kCorrelated, 0.1f, "correlated.png"));
  const LrSweep decorrelated = find_lr(sweep(FindLrMode::kDecorrelated, 0.1f, "decorrelated2.png"));
  ASSERT_EQ(correlated.points[0].outcome, RateOutcome::kMeasured);
  EXPECT_NEAR(correlated.points[0].mean_loss, decorrelated.points[0].mean_loss, 1e-6);
  ASSERT_EQ(correlated.points[2].outcome, RateOutcome::kMeasured);
  EXPECT_GT(std::abs(correlated.points[2].mean_loss - decorrelated.points[2].mean_loss), 1e-4)
      << "the correlated sweep's last rate starts from the model the lower rates trained";
}

TEST(LrFinder, ARateTooHighEndsTheSweep) {
  LabOptions o = sweep(FindLrMode::kCorrelated, 1e9f, "diverging.png");
  o.findlr_rates = 5;  // 1e-3, 0.18, 31.6, 5.6e3, 1e6... up to 1e9
  const LrSweep result = find_lr(o);
  ASSERT_EQ(result.points.size(), 5u);
  size_t measured = 0;
  while (measured < 5 && result.points[measured].outcome == RateOutcome::kMeasured) ++measured;
  ASSERT_GE(measured, 1u);
  ASSERT_LT(measured, 5u) << "a rate of 1e9 diverges";
  EXPECT_EQ(result.points[measured].outcome, RateOutcome::kDiverged);
  for (size_t i = measured + 1; i < 5; ++i) {
    EXPECT_EQ(result.points[i].outcome, RateOutcome::kNotRun) << "rate " << i;
  }
  size_t lowest = 0;
  for (size_t i = 1; i < measured; ++i) {
    if (result.points[i].mean_loss < result.points[lowest].mean_loss) lowest = i;
  }
  ASSERT_TRUE(result.suggested);
  EXPECT_FLOAT_EQ(*result.suggested, result.points[lowest].lr / 10);

  std::ifstream csv(temp_path("diverging.csv"));
  std::stringstream text;
  text << csv.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("lr,mean_loss,outcome\n0.001,"));
  EXPECT_THAT(text.str(), HasSubstr(",diverged\n"));
  EXPECT_THAT(text.str(), HasSubstr("1e+09,,not run\n"));
  std::ifstream png(temp_path("diverging.png"), std::ios::binary);
  char magic[4] = {};
  png.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

TEST(LrFinder, BadInputIsOneClearError) {
  LabOptions o = sweep(FindLrMode::kCorrelated, 0.1f, "bad.png");
  o.findlr_start = 0.5f;
  EXPECT_THAT(error_of([&] { find_lr(o); }), HasSubstr("need 0 < 0.5 < 0.1"));
  o = sweep(FindLrMode::kCorrelated, 0.1f, "bad.png");
  o.findlr_rates = 1;
  EXPECT_THAT(error_of([&] { find_lr(o); }), HasSubstr("at least 2 rates"));
  o = sweep(FindLrMode::kCorrelated, 0.1f, "bad.png");
  o.chkpt = temp_path("sweep.ckpt");
  EXPECT_THAT(error_of([&] { find_lr(o); }), HasSubstr("drop --chkpt and --resume"));
  o = sweep(FindLrMode::kCorrelated, 0.1f, "bad.png");
  o.findlr_plot = temp_path("missing/plot.png");
  EXPECT_THAT(error_of([&] { find_lr(o); }), HasSubstr("does not exist"));
}

}  // namespace
}  // namespace day3
