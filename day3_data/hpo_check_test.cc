// The hyper-parameter search's exercises in `bazel test //day3_data:check`, against
// hand-worked cases and the library's reference rules (common/hpo/rules.h):
//   TP3.6: a split worked out by hand (pruned trials, running ones, failed ones, both
//          directions), then against the reference on random studies;
//   TP3.7: promotions by hand (floor(n / eta), the first trial of a rung, ties, direction);
//   TP3.8: decisions by hand (best so far, NaNs, even counts, no value at the step), then
//          against the reference on random studies.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "common/hpo/rules.h"
#include "day3_data/exercises.h"

namespace day3 {
namespace {

using course::hpo::Direction;
using course::hpo::Trial;
using course::hpo::TrialState;

Trial study_trial(int number, TrialState state, double value, std::map<int, double> steps = {}) {
  Trial trial;
  trial.number = number;
  trial.state = state;
  trial.intermediate = std::move(steps);
  if (state == TrialState::kComplete) trial.value = value;
  return trial;
}

std::vector<int> numbers_of(const std::vector<const Trial*>& trials) {
  std::vector<int> numbers;
  for (const Trial* trial : trials) numbers.push_back(trial->number);
  return numbers;
}

// A random study: complete, pruned (reported up to a random step), running and failed trials.
std::vector<Trial> random_study(std::mt19937& rng, int n) {
  std::vector<Trial> trials;
  std::uniform_real_distribution<double> value(0, 1);
  std::uniform_int_distribution<int> state(0, 5), steps(0, 4);
  for (int i = 0; i < n; ++i) {
    const int kind = state(rng);
    const TrialState s = kind < 3   ? TrialState::kComplete
                         : kind < 5 ? (kind == 3 ? TrialState::kPruned : TrialState::kRunning)
                                    : TrialState::kFail;
    std::map<int, double> reported;
    const int last = steps(rng);
    for (int step = 1; step <= last; ++step) reported[step] = value(rng);
    trials.push_back(study_trial(i, s, value(rng), reported));
  }
  return trials;
}

TEST(TP3_6, SplitByHand) {
  std::vector<Trial> trials = {study_trial(0, TrialState::kComplete, 5.0),
                               study_trial(1, TrialState::kComplete, 1.0),
                               study_trial(2, TrialState::kPruned, 0, {{1, 0.5}}),
                               study_trial(3, TrialState::kPruned, 0, {{1, 9.0}, {2, 8.0}}),
                               study_trial(4, TrialState::kRunning, 0),
                               study_trial(5, TrialState::kFail, 0),
                               study_trial(6, TrialState::kComplete, 3.0),
                               study_trial(7, TrialState::kPruned, 0)};
  course::hpo::TrialSplit split = day3::split_trials(trials, Direction::kMinimize, 2, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{1, 6})) << "the two smallest values";
  EXPECT_EQ(numbers_of(split.above), (std::vector<int>{0, 2, 3, 7}))
      << "the other finished trials, without the running and failed ones";
  split = day3::split_trials(trials, Direction::kMinimize, 4, true);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{0, 1, 3, 6}))
      << "after the complete trials, the pruned one that reached step 2 beats step 1's";
  EXPECT_EQ(numbers_of(split.above), (std::vector<int>{2, 4, 7}))
      << "the constant liar puts the running trial above";
  split = day3::split_trials(trials, Direction::kMaximize, 1, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{0})) << "maximising: the largest value";
  split = day3::split_trials(trials, Direction::kMaximize, 6, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{0, 1, 2, 3, 6, 7}));
  EXPECT_TRUE(split.above.empty());
}

TEST(TP3_6, SplitMatchesTheReferenceOnRandomStudies) {
  std::mt19937 rng(36);
  for (int round = 0; round < 200; ++round) {
    const std::vector<Trial> trials = random_study(rng, 1 + round % 40);
    const Direction direction = round % 2 ? Direction::kMaximize : Direction::kMinimize;
    const int n_below = round % 7;
    const bool liar = round % 3 == 0;
    const auto ours = day3::split_trials(trials, direction, n_below, liar);
    const auto reference = course::hpo::split_trials(trials, direction, n_below, liar);
    ASSERT_EQ(numbers_of(ours.below), numbers_of(reference.below)) << "round " << round;
    ASSERT_EQ(numbers_of(ours.above), numbers_of(reference.above)) << "round " << round;
  }
}

TEST(TP3_7, PromotionsByHand) {
  // 8 values at a rung, eta 4: the top 2 go on.
  const std::vector<double> rung = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  EXPECT_TRUE(day3::promotable_to_next_rung(0.2, rung, 4, Direction::kMinimize)) << "second best";
  EXPECT_FALSE(day3::promotable_to_next_rung(0.3, rung, 4, Direction::kMinimize)) << "third best";
  EXPECT_TRUE(day3::promotable_to_next_rung(0.7, rung, 4, Direction::kMaximize));
  EXPECT_FALSE(day3::promotable_to_next_rung(0.6, rung, 4, Direction::kMaximize));
  // 7 values: floor(7 / 4) = 1, only the best.
  const std::vector<double> seven(rung.begin(), rung.end() - 1);
  EXPECT_FALSE(day3::promotable_to_next_rung(0.2, seven, 4, Direction::kMinimize))
      << "floor, not ceil";
  // Fewer than eta values: the best so far goes on (the first trial at a rung always does).
  EXPECT_TRUE(day3::promotable_to_next_rung(0.5, {0.5}, 4, Direction::kMinimize));
  EXPECT_TRUE(day3::promotable_to_next_rung(0.5, {0.9, 0.5, 0.7}, 4, Direction::kMinimize));
  EXPECT_FALSE(day3::promotable_to_next_rung(0.7, {0.9, 0.5, 0.7}, 4, Direction::kMinimize));
  // A tie with the last promoted value promotes.
  EXPECT_TRUE(day3::promotable_to_next_rung(0.2, {0.1, 0.2, 0.2, 0.9}, 2, Direction::kMinimize));
  EXPECT_TRUE(day3::promotable_to_next_rung(0.3, {0.3, 0.3, 0.1, 0.9}, 2, Direction::kMaximize));
}

TEST(TP3_8, DecisionsByHand) {
  std::vector<Trial> done;
  for (int n = 0; n < 4; ++n) {
    done.push_back(study_trial(n, TrialState::kComplete, 0, {{1, 0.1 * n}, {2, 0.1 * n}}));
  }
  done[3].intermediate[2] = NAN;  // at step 2: 0, .1, .2 and a NaN: median .1
  std::vector<const Trial*> complete;
  for (const Trial& trial : done) complete.push_back(&trial);
  // At step 1 the median of 0, .1, .2, .3 is .15 (an even count: the middle two's mean).
  EXPECT_TRUE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, 0.16}}), 1, complete,
                                  Direction::kMinimize));
  EXPECT_FALSE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, 0.14}}), 1,
                                   complete, Direction::kMinimize));
  EXPECT_TRUE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, 0.14}}), 1, complete,
                                  Direction::kMaximize));
  // The best value so far counts, not the last one.
  EXPECT_FALSE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, 0.05}, {2, 0.5}}),
                                   2, complete, Direction::kMinimize));
  EXPECT_TRUE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, 0.3}, {2, 0.11}}), 2,
                                  complete, Direction::kMinimize))
      << "NaNs are left out of the median";
  EXPECT_FALSE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{3, 0.9}}), 3, complete,
                                   Direction::kMinimize))
      << "no complete trial reported at step 3";
  EXPECT_TRUE(day3::median_prunes(study_trial(9, TrialState::kRunning, 0, {{1, NAN}}), 1, complete,
                                  Direction::kMinimize))
      << "a trial with no value at all is pruned";
}

TEST(TP3_8, DecisionsMatchTheReferenceOnRandomStudies) {
  std::mt19937 rng(38);
  for (int round = 0; round < 300; ++round) {
    const std::vector<Trial> trials = random_study(rng, 2 + round % 30);
    std::vector<const Trial*> complete;
    for (const Trial& trial : trials) {
      if (trial.state == TrialState::kComplete) complete.push_back(&trial);
    }
    const Trial& trial = trials.back();
    if (trial.intermediate.empty()) continue;
    const int step = trial.intermediate.rbegin()->first;
    const Direction direction = round % 2 ? Direction::kMaximize : Direction::kMinimize;
    ASSERT_EQ(day3::median_prunes(trial, step, complete, direction),
              course::hpo::median_prunes(trial, step, complete, direction))
        << "round " << round;
  }
}

}  // namespace
}  // namespace day3
