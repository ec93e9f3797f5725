// TPE: its gamma and weights by hand, the split of trials, the Parzen estimator against hand
// values and against Optuna's own (testdata/parzen.tsv), and the sampler's search quality.
#include "common/hpo/tpe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/hpo/objectives.h"
#include "common/hpo/synthetic_study.h"

namespace course::hpo {
namespace {

Trial finished_trial(int number, TrialState state, double value, ParamValues params = {0.0}) {
  Trial trial;
  trial.number = number;
  trial.state = state;
  trial.params = std::move(params);
  if (state == TrialState::kComplete) trial.value = value;
  return trial;
}

std::vector<int> numbers(const std::vector<const Trial*>& trials) {
  std::vector<int> out;
  for (const Trial* trial : trials) out.push_back(trial->number);
  return out;
}

TEST(Tpe, GammaAndWeightsByHand) {
  EXPECT_EQ(tpe_gamma(0), 0);
  EXPECT_EQ(tpe_gamma(1), 1);
  EXPECT_EQ(tpe_gamma(10), 1);
  EXPECT_EQ(tpe_gamma(11), 2);
  EXPECT_EQ(tpe_gamma(249), 25);
  EXPECT_EQ(tpe_gamma(1000), 25);
  EXPECT_EQ(tpe_weights(3), (std::vector<double>{1, 1, 1}));
  const std::vector<double> w = tpe_weights(28);  // a ramp of 3 from 1/28 to 1, then 25 ones
  ASSERT_EQ(w.size(), 28u);
  EXPECT_DOUBLE_EQ(w[0], 1.0 / 28);
  EXPECT_DOUBLE_EQ(w[1], (1.0 / 28 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(w[2], 1.0);
  EXPECT_EQ(std::count(w.begin(), w.end(), 1.0), 26);
  EXPECT_DOUBLE_EQ(tpe_weights(26)[0], 1.0 / 26);
}

TEST(Tpe, SplitsBestCompleteThenFurthestPrunedAndRunningAbove) {
  std::vector<Trial> trials = {
      finished_trial(0, TrialState::kComplete, 5.0), finished_trial(1, TrialState::kComplete, 1.0),
      finished_trial(2, TrialState::kPruned, 0.0),   finished_trial(3, TrialState::kPruned, 0.0),
      finished_trial(4, TrialState::kRunning, 0.0),  finished_trial(5, TrialState::kFail, 0.0),
      finished_trial(6, TrialState::kComplete, 3.0)};
  trials[2].intermediate = {{1, 0.5}};
  trials[3].intermediate = {{1, 9.0}, {2, 8.0}};  // further trained: ranks before trial 2
  TrialSplit split = split_trials(trials, Direction::kMinimize, 2, false);
  EXPECT_EQ(numbers(split.below), (std::vector<int>{1, 6}));
  EXPECT_EQ(numbers(split.above), (std::vector<int>{0, 2, 3}));
  split = split_trials(trials, Direction::kMinimize, 4, true);
  EXPECT_EQ(numbers(split.below), (std::vector<int>{0, 1, 3, 6}));
  EXPECT_EQ(numbers(split.above), (std::vector<int>{2, 4}));
  split = split_trials(trials, Direction::kMaximize, 1, true);
  EXPECT_EQ(numbers(split.below), (std::vector<int>{0}));
}

TEST(ParzenEstimator, KernelsByHand) {
  // Sorted with the ends: 0 .2 .5 .9 1. Gaps to neighbours: .3 .4 .4; the outermost take their
  // inner gap (.3 and .4); the floor is 1 / min(100, 3 + 2) = .2. Prior: centre .5, width 1.
  const SearchSpace x = parse_search_space("x=float:0:1");
  const ParzenEstimator estimator(x, {{0.9}, {0.2}, {0.5}}, {1, 1, 1}, 1.0);
  EXPECT_EQ(estimator.mus(0), (std::vector<double>{0.9, 0.2, 0.5, 0.5}));
  const std::vector<double> sigmas = estimator.sigmas(0);
  EXPECT_NEAR(sigmas[0], 0.4, 1e-15);
  EXPECT_NEAR(sigmas[1], 0.3, 1e-15);
  EXPECT_NEAR(sigmas[2], 0.4, 1e-15);
  EXPECT_NEAR(sigmas[3], 1.0, 1e-15);
  EXPECT_EQ(estimator.weights(), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  // One kernel's truncated density at its centre: 1 / (sigma sqrt(2 pi) (Phi(b) - Phi(a))).
  const ParzenEstimator prior_only(x, {}, {}, 1.0);
  const double mass = std::erf(0.5 / std::sqrt(2.0));
  EXPECT_NEAR(prior_only.log_pdf({0.5}), -std::log(std::sqrt(2 * M_PI) * mass), 1e-12);
}

std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> values;
  std::istringstream in(text);
  for (double v; in >> v;) values.push_back(v);
  return values;
}

TEST(ParzenEstimator, MatchesOptunasDensities) {
  std::ifstream file("common/hpo/tests/testdata/parzen.tsv");
  ASSERT_TRUE(file) << "testdata/parzen.tsv";
  std::string line;
  std::getline(file, line);
  int rows = 0;
  while (std::getline(file, line)) {
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 4u) << line;
    std::vector<ParamValues> observations;
    for (double value : parse_numbers(fields[1])) observations.push_back({value});
    const ParzenEstimator estimator(parse_search_space(fields[0]), observations,
                                    tpe_weights(static_cast<int>(observations.size())), 1.0);
    const double x = std::stod(fields[2]), expected = std::stod(fields[3]);
    EXPECT_NEAR(estimator.log_pdf({x}), expected, 1e-9 * (1 + std::abs(expected))) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 46);
}

TEST(ParzenEstimator, SamplesFollowTheDensity) {
  // An int parameter: the density is a probability per integer, so the masses sum to 1 and
  // the sampled frequencies match them.
  const SearchSpace space = parse_search_space("b=int:16:512:log");
  const ParzenEstimator estimator(space, {{32}, {32}, {64}}, {1, 1, 1}, 1.0);
  double total = 0, near_32 = 0;
  for (int b = 16; b <= 512; ++b) {
    const double p = std::exp(estimator.log_pdf({static_cast<double>(b)}));
    total += p;
    if (b >= 24 && b <= 45) near_32 += p;
  }
  EXPECT_NEAR(total, 1.0, 1e-9);
  std::mt19937_64 rng(7);
  constexpr int kDraws = 20000;
  int hits = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double v = estimator.sample(rng)[0];
    ASSERT_TRUE(v >= 16 && v <= 512 && v == std::round(v)) << v;
    hits += v >= 24 && v <= 45;
  }
  const double spread = std::sqrt(near_32 * (1 - near_32) / kDraws);
  EXPECT_NEAR(static_cast<double>(hits) / kDraws, near_32, 4 * spread);
}

TEST(Tpe, AcquisitionMatchesOptunasAfterThirtyTrials) {
  std::ifstream file("common/hpo/tests/testdata/tpe_acquisition.tsv");
  ASSERT_TRUE(file);
  std::string line;
  std::getline(file, line);
  std::vector<Trial> trials;
  std::vector<std::pair<ParamValues, double>> candidates;
  while (std::getline(file, line)) {
    char kind[16];
    double x, y, value;
    ASSERT_EQ(std::sscanf(line.c_str(), "%15s %lf %lf %lf", kind, &x, &y, &value), 4) << line;
    if (std::string(kind) == "trial") {
      trials.push_back(
          finished_trial(static_cast<int>(trials.size()), TrialState::kComplete, value, {x, y}));
    } else {
      candidates.push_back({{x, y}, value});
    }
  }
  ASSERT_EQ(trials.size(), 30u);
  ASSERT_EQ(candidates.size(), 12u);
  const SearchSpace space = parse_search_space(synthetic_space("himmelblau"));
  const TrialSplit split = split_trials(trials, Direction::kMinimize, tpe_gamma(30), true);
  ASSERT_EQ(split.below.size(), 3u);
  const auto fit = [&](const std::vector<const Trial*>& group) {
    std::vector<ParamValues> points;
    for (const Trial* trial : group) points.push_back(trial->params);
    return ParzenEstimator(space, points, tpe_weights(static_cast<int>(points.size())), 1.0);
  };
  const ParzenEstimator below = fit(split.below), above = fit(split.above);
  for (const auto& [point, expected] : candidates) {
    EXPECT_NEAR(below.log_pdf(point) - above.log_pdf(point), expected,
                1e-9 * (1 + std::abs(expected)));
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

TEST(TpeSampler, FindsBetterPointsThanRandomWithTheSameBudget) {
  for (const std::string function : {"himmelblau", "rosenbrock"}) {
    std::vector<double> tpe, random;
    for (uint64_t seed = 0; seed < 9; ++seed) {
      tpe.push_back(best_of_synthetic_study(function, *make_sampler("tpe"), seed, 60));
      random.push_back(best_of_synthetic_study(function, *make_sampler("random"), seed, 60));
    }
    EXPECT_LT(median(tpe), 0.5 * median(random)) << function;
  }
}

TEST(TpeSampler, ConstantLiarAvoidsTheRunningTrialsPoint) {
  // Ten finished trials, the best at x = 0.5, and a running trial exactly there: without the
  // liar TPE proposes close to it again; with it, the running point counts as bad.
  const SearchSpace space = parse_search_space("x=float:0:1");
  std::vector<Trial> trials;
  for (int n = 0; n < 20; ++n) {
    const double x = n / 19.0;
    trials.push_back(finished_trial(n, TrialState::kComplete, std::abs(x - 0.5), {x}));
  }
  for (int k = 0; k < 3; ++k) {
    Trial running = finished_trial(20 + k, TrialState::kRunning, 0.0, {0.5});
    trials.push_back(running);
  }
  const auto distance_to_half = [&](const std::string& spec) {
    double total = 0;
    for (uint64_t seed = 0; seed < 50; ++seed) {
      std::mt19937_64 rng = trial_rng(seed, 23);
      const SamplingContext context{space, Direction::kMinimize, trials, 23, seed};
      total += std::abs((*make_sampler(spec)->sample(context, rng))[0] - 0.5);
    }
    return total / 50;
  };
  EXPECT_GT(distance_to_half("tpe"), 1.5 * distance_to_half("tpe:noliar"));
}

TEST(GridSampler, VisitsEveryPointOnceThenStops) {
  const SearchSpace space = parse_search_space("x=float:0:1;b=int:1:2;o=cat:a,b,c");
  const GridSampler grid(3);
  EXPECT_EQ(grid.axis(space.params[0]), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(grid.axis(space.params[1]), (std::vector<double>{1, 2}));
  std::vector<Trial> trials;
  std::set<ParamValues> seen;
  for (int n = 0; n < 18; ++n) {
    std::mt19937_64 rng = trial_rng(1, n);
    const std::optional<ParamValues> point =
        grid.sample({space, Direction::kMinimize, trials, n, 1}, rng);
    ASSERT_TRUE(point);
    EXPECT_TRUE(seen.insert(*point).second);
    trials.push_back(finished_trial(n, TrialState::kRunning, 0, *point));
  }
  std::mt19937_64 rng = trial_rng(1, 18);
  EXPECT_FALSE(grid.sample({space, Direction::kMinimize, trials, 18, 1}, rng));
}

}  // namespace
}  // namespace course::hpo
