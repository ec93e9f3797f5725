// The hyper-parameter search's exercises in `bazel test //day3_data:check`, against
// hand-worked cases and the library's reference rules (common/hpo/rules.h):
//   TP3.8: a split worked out by hand (pruned trials, running ones, failed ones, both
//          directions, NaN and infinite reports), then against the reference on random studies;
//   TP3.9: promotions by hand (floor(n / eta), the first trial of a rung, ties, direction),
//          then against the reference on random rungs with ties and infinities;
//   TP3.10: decisions by hand (best so far, NaNs, even counts, no value at the step), then
//          against the reference on random studies.
// The random studies come in two kinds: values drawn from an interval, and values drawn from a
// handful with repeats (ties), +-inf and, for reports and failed trials, NaN.
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

// A value of a study: uniform in [0, 1), or (special) one of a handful with repeats, so that
// trials tie, with +-inf and, where `nan_allowed`, NaN.
double study_value(std::mt19937& rng, bool special, bool nan_allowed) {
  if (!special) return std::uniform_real_distribution<double>(0, 1)(rng);
  static const double kValues[] = {-INFINITY, -1.0, 0.0, 0.5, 0.5, 2.0, INFINITY, NAN};
  return kValues[std::uniform_int_distribution<int>(0, nan_allowed ? 7 : 6)(rng)];
}

// A random study: complete, pruned (reported up to a random step, none to 4), running and
// failed trials. A complete trial's value is never NaN (a NaN objective fails the trial); a
// failed trial keeps the NaN it ended on.
std::vector<Trial> random_study(std::mt19937& rng, int n, bool special) {
  std::vector<Trial> trials;
  std::uniform_int_distribution<int> state(0, 5), steps(0, 4);
  for (int i = 0; i < n; ++i) {
    const int kind = state(rng);
    const TrialState s = kind < 3   ? TrialState::kComplete
                         : kind < 5 ? (kind == 3 ? TrialState::kPruned : TrialState::kRunning)
                                    : TrialState::kFail;
    std::map<int, double> reported;
    const int last = steps(rng);
    for (int step = 1; step <= last; ++step) reported[step] = study_value(rng, special, true);
    trials.push_back(study_trial(i, s, study_value(rng, special, false), reported));
    if (s == TrialState::kFail && special) trials.back().value = NAN;
  }
  return trials;
}

TEST(TP3_8, SplitByHand) {
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

TEST(TP3_8, NaNReportsRankLastInEitherDirection) {
  // Pruned at step 2 with NaN, 0.3, +inf and -inf, and a complete trial at +inf. A NaN report
  // ranks as +inf does when minimising, so with the +inf trial it is last.
  const std::vector<Trial> trials = {study_trial(0, TrialState::kPruned, 0, {{1, 0.1}, {2, NAN}}),
                                     study_trial(1, TrialState::kPruned, 0, {{2, 0.3}}),
                                     study_trial(2, TrialState::kPruned, 0, {{2, INFINITY}}),
                                     study_trial(3, TrialState::kPruned, 0, {{2, -INFINITY}}),
                                     study_trial(4, TrialState::kComplete, INFINITY)};
  course::hpo::TrialSplit split = day3::split_trials(trials, Direction::kMaximize, 3, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{1, 2, 4}))
      << "maximising: the complete trial first even at +inf, then +inf, then 0.3; a NaN "
         "report is the worst in either direction (not -inf turned into +inf by the sign)";
  split = day3::split_trials(trials, Direction::kMinimize, 3, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{1, 3, 4}))
      << "minimising: the complete trial, then -inf, then 0.3";
}

TEST(TP3_8, TiesKeepTrialNumberOrder) {
  // Twenty complete trials of equal value: the first n_below by number are below.
  std::vector<Trial> trials;
  for (int n = 0; n < 20; ++n) trials.push_back(study_trial(n, TrialState::kComplete, 0.5));
  trials.push_back(study_trial(20, TrialState::kComplete, 0.25));
  const course::hpo::TrialSplit split = day3::split_trials(trials, Direction::kMinimize, 4, false);
  EXPECT_EQ(numbers_of(split.below), (std::vector<int>{0, 1, 2, 20}))
      << "ties keep the study's order (a stable sort): the earliest trials win";
}

TEST(TP3_8, SplitMatchesTheReferenceOnRandomStudies) {
  std::mt19937 rng(36);
  for (int round = 0; round < 400; ++round) {
    const bool special = round % 4 >= 2;
    const std::vector<Trial> trials = random_study(rng, 1 + round % 40, special);
    const Direction direction = round % 2 ? Direction::kMaximize : Direction::kMinimize;
    const int n_below = round % 7;
    const bool liar = round % 3 == 0;
    const auto ours = day3::split_trials(trials, direction, n_below, liar);
    const auto reference = course::hpo::split_trials(trials, direction, n_below, liar);
    const std::string study = special ? " (ties, NaN and infinite values)" : "";
    ASSERT_EQ(numbers_of(ours.below), numbers_of(reference.below)) << "round " << round << study;
    ASSERT_EQ(numbers_of(ours.above), numbers_of(reference.above)) << "round " << round << study;
  }
}

TEST(TP3_9, PromotionsByHand) {
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

TEST(TP3_9, PromotionsMatchTheReferenceOnRandomRungs) {
  std::mt19937 rng(37);
  for (int round = 0; round < 400; ++round) {
    const bool special = round % 2 == 1;
    std::vector<double> rung(1 + round % 23);
    for (double& value : rung) value = study_value(rng, special, false);
    const int eta = 2 + round % 3;
    const Direction direction = round % 4 >= 2 ? Direction::kMaximize : Direction::kMinimize;
    for (const double value : rung) {
      ASSERT_EQ(day3::promotable_to_next_rung(value, rung, eta, direction),
                course::hpo::promotable_to_next_rung(value, rung, eta, direction))
          << "round " << round << ": value " << value << " among " << rung.size()
          << " at the rung, eta " << eta << (special ? " (ties and infinities)" : "");
    }
  }
}

TEST(TP3_10, DecisionsByHand) {
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

TEST(TP3_10, DecisionsMatchTheReferenceOnRandomStudies) {
  std::mt19937 rng(38);
  for (int round = 0; round < 600; ++round) {
    const bool special = round % 4 >= 2;
    const std::vector<Trial> trials = random_study(rng, 2 + round % 30, special);
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
        << "round " << round << (special ? " (ties, NaN and infinite values)" : "");
  }
}

}  // namespace
}  // namespace day3
