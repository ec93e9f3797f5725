// The pruners: hand-worked cases, and Optuna's own decisions on 60 recorded learning curves
// (testdata/pruner_decisions.csv) replayed through a study in a SQLite file.
#include "common/hpo/pruner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/core/error.h"
#include "common/hpo/study.h"

namespace course::hpo {
namespace {

Trial trial_with(int number, TrialState state, std::map<int, double> intermediate,
                 std::map<int, double> rungs = {}) {
  Trial trial;
  trial.number = number;
  trial.state = state;
  trial.intermediate = std::move(intermediate);
  trial.rungs = std::move(rungs);
  if (state == TrialState::kComplete) trial.value = trial.intermediate.rbegin()->second;
  return trial;
}

TEST(Percentile, InterpolatesLikeNumpy) {
  EXPECT_DOUBLE_EQ(nan_percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(nan_percentile({1, NAN, 2, 3}, 75), 2.5);
  EXPECT_DOUBLE_EQ(nan_percentile({10, 20, 30, 40, 50}, 75), 40);
  EXPECT_TRUE(std::isnan(nan_percentile({NAN}, 50)));
}

TEST(Percentile, InfinitiesInterpolateAsLimits) {
  EXPECT_EQ(nan_percentile({-INFINITY, 3}, 50), -INFINITY);
  EXPECT_EQ(nan_percentile({-INFINITY, -INFINITY}, 50), -INFINITY);
  EXPECT_EQ(nan_percentile({INFINITY, 1, INFINITY}, 50), INFINITY) << "an exact rank";
  EXPECT_EQ(nan_percentile({1, 2, INFINITY}, 50), 2) << "an exact rank next to +inf";
  EXPECT_TRUE(std::isnan(nan_percentile({-INFINITY, INFINITY}, 50)));
}

TEST(MedianPruner, WaitsForStartupTrialsThenComparesTheBestSoFar) {
  const MedianPruner pruner({});
  std::vector<Trial> complete;
  for (int n = 0; n < 5; ++n) {
    complete.push_back(trial_with(n, TrialState::kComplete, {{1, 0.1 * n}, {2, 0.2 * n}}));
  }
  // Median at step 2 over 0, .2, .4, .6, .8 is .4; the trial's best so far is its minimum.
  const Trial bad = trial_with(5, TrialState::kRunning, {{1, 0.9}, {2, 0.5}});
  const Trial good = trial_with(5, TrialState::kRunning, {{1, 0.3}, {2, 0.5}});
  EXPECT_TRUE(pruner.decide(bad, complete, Direction::kMinimize).prune);
  EXPECT_FALSE(pruner.decide(good, complete, Direction::kMinimize).prune);
  EXPECT_FALSE(pruner.decide(bad, complete, Direction::kMaximize).prune);
  complete.pop_back();  // four complete trials: still starting up
  EXPECT_FALSE(pruner.decide(bad, complete, Direction::kMinimize).prune);
}

TEST(SuccessiveHalvingPruner, PromotesTheTopQuarterOfEachRung) {
  const SuccessiveHalvingPruner pruner({1, 4, 0});
  std::vector<Trial> others;
  // Seven trials recorded at rung 0 (step 1): with this one, 8 values, top floor(8/4) = 2.
  for (int n = 0; n < 7; ++n)
    others.push_back(trial_with(n, TrialState::kPruned, {{1, n}}, {{0, n}}));
  PruneDecision second =
      pruner.decide(trial_with(7, TrialState::kRunning, {{1, 1.0}}), others, Direction::kMinimize);
  EXPECT_FALSE(second.prune);
  EXPECT_EQ(second.new_rungs, (std::map<int, double>{{0, 1.0}}));
  EXPECT_TRUE(
      pruner.decide(trial_with(7, TrialState::kRunning, {{1, 1.5}}), others, Direction::kMinimize)
          .prune);
  // The first trial at a rung is promoted (it is the best so far); at step 4 it meets rung 1.
  const PruneDecision alone =
      pruner.decide(trial_with(0, TrialState::kRunning, {{4, 3.0}}), {}, Direction::kMaximize);
  EXPECT_FALSE(alone.prune);
  EXPECT_EQ(alone.new_rungs, (std::map<int, double>{{0, 3.0}, {1, 3.0}}));
}

TEST(AshaPruner, StopsBelowTheTopQuantileOfItsHighestRung) {
  const AshaPruner pruner({1, 4, 16});  // rungs at steps 1, 4, 16
  std::vector<Trial> others;
  for (int n = 0; n < 4; ++n) {
    others.push_back(trial_with(n, TrialState::kComplete, {{4, 0.1 * n}}, {{1, 0.1 * n}}));
  }
  // Maximising: the 75th percentile of 0, .1, .2, .3 is .225.
  const PruneDecision low =
      pruner.decide(trial_with(4, TrialState::kRunning, {{4, 0.2}}), others, Direction::kMaximize);
  EXPECT_TRUE(low.prune);
  EXPECT_EQ(low.new_rungs, (std::map<int, double>{{1, 0.2}}));
  EXPECT_FALSE(
      pruner.decide(trial_with(4, TrialState::kRunning, {{4, 0.25}}), others, Direction::kMaximize)
          .prune);
  // Minimising: the cutoff is on the negated values, -(.075): .05 survives, .1 does not.
  EXPECT_FALSE(
      pruner.decide(trial_with(4, TrialState::kRunning, {{4, 0.05}}), others, Direction::kMinimize)
          .prune);
  EXPECT_TRUE(
      pruner.decide(trial_with(4, TrialState::kRunning, {{4, 0.1}}), others, Direction::kMinimize)
          .prune);
  // Nothing recorded yet at its rung: it carries on.
  EXPECT_FALSE(
      pruner.decide(trial_with(4, TrialState::kRunning, {{1, 0.0}}), {}, Direction::kMaximize)
          .prune);
}

TEST(HyperbandPruner, AssignsBracketsInProportionToTheirBudgets) {
  // max 27, min 1, eta 3: 4 brackets with budgets ceil(4 * 27 / 4) = 27, 12, 5, 4.
  const HyperbandPruner pruner({1, 27, 3}, "trace");
  std::vector<int> counts(4, 0);
  for (int n = 0; n < 4800; ++n) ++counts[pruner.bracket(n, 4)];
  const std::vector<double> share = {27 / 48.0, 12 / 48.0, 5 / 48.0, 4 / 48.0};
  for (int s = 0; s < 4; ++s) EXPECT_NEAR(counts[s] / 4800.0, share[s], 0.03) << s;
}

TEST(MakePruner, RefusesUnknownSpecs) {
  for (const char* bad : {"nope", "sh:eta=1", "sh:bogus=2", "median:startup=-1", "hyperband:max=1",
                          "asha:grace=0", "none:x=1", "sh:eta=abc"}) {
    EXPECT_THROW(make_pruner(bad, "s"), Error) << bad;
  }
}

struct Decision {
  int trial, step;
  bool pruned;
};

TEST(Pruners, DecideLikeOptunaOnRecordedCurves) {
  std::map<int, std::vector<double>> curves;
  {
    std::ifstream file("common/hpo/tests/testdata/pruner_traces.csv");
    ASSERT_TRUE(file);
    std::string line;
    std::getline(file, line);
    while (std::getline(file, line)) {
      int trial, step;
      double value;
      ASSERT_EQ(std::sscanf(line.c_str(), "%d,%d,%lf", &trial, &step, &value), 3);
      curves[trial].push_back(value);
    }
  }
  std::map<std::pair<std::string, std::string>, std::vector<Decision>> expected;
  {
    std::ifstream file("common/hpo/tests/testdata/pruner_decisions.csv");
    ASSERT_TRUE(file);
    std::string line;
    std::getline(file, line);
    while (std::getline(file, line)) {
      std::istringstream in(line);
      std::string pruner, direction, trial, step, pruned;
      std::getline(in, pruner, ',');
      std::getline(in, direction, ',');
      std::getline(in, trial, ',');
      std::getline(in, step, ',');
      std::getline(in, pruned, ',');
      expected[{pruner, direction}].push_back({std::stoi(trial), std::stoi(step), pruned == "1"});
    }
  }
  ASSERT_EQ(expected.size(), 8u);
  for (const auto& [key, decisions] : expected) {
    const auto& [pruner, direction] = key;
    const std::string path = testing::TempDir() + "/trace.db";
    std::remove(path.c_str());
    StudyStorage storage(path, {.create = true, .journal = JournalMode::kWal});
    StudyConfig config;
    config.name = "trace";
    config.direction = parse_direction(direction);
    config.space = parse_search_space("x=float:0:1");
    config.sampler = "random";
    config.pruner = pruner;
    storage.create_study(config);
    Study study(storage, "trace");
    const double sign = config.direction == Direction::kMaximize ? 1 : -1;
    std::vector<Decision> ours;
    for (const auto& [number, curve] : curves) {
      Trial trial = *study.ask("test");
      bool pruned = false;
      for (size_t s = 0; s < curve.size() && !pruned; ++s) {
        pruned = study.report(trial, static_cast<int>(s + 1), sign * curve[s]);
        ours.push_back({number, static_cast<int>(s + 1), pruned});
      }
      study.tell(trial, pruned ? TrialState::kPruned : TrialState::kComplete,
                 pruned ? std::nullopt : std::optional<double>(sign * curve.back()));
    }
    ASSERT_EQ(ours.size(), decisions.size()) << pruner << " " << direction;
    for (size_t i = 0; i < ours.size(); ++i) {
      ASSERT_EQ(ours[i].pruned, decisions[i].pruned)
          << pruner << " " << direction << ": trial " << ours[i].trial << " step " << ours[i].step;
    }
  }
}

}  // namespace
}  // namespace course::hpo
