// `bazel test //day3_data:check`: the trainee's day-3 exercises against independent references.
//   TP3.1: the cut's area against its lambda (exactly), its sides against sqrt(1 - lambda),
//          boxes cut by every border, the ends lambda = 0 and 1;
//   TP3.2: targets worked out by hand (partners, smoothing, the lambda on the right label);
//   TP3.3: the gradient against central finite differences of a double-precision loss;
//   TP3.4: samples formed by hand, and as the library groups a shard written by libarchive;
//   TP3.5: a permutation that keeps to its groups of pages, shuffles the pages and the samples
//          within each group;
//   TP3.6: a split worked out by hand (pruned trials, running ones, failed ones, both
//          directions), then against the library's reference on random studies;
//   TP3.7: promotions by hand (floor(n / eta), the first trial of a rung, ties, direction);
//   TP3.8: decisions by hand (best so far, NaNs, even counts, no value at the step), then
//          against the library's reference on random studies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include "common/hpo/rules.h"
#include "common/kernels/soft_cross_entropy.h"
#include "day3_data/exercises.h"

namespace day3 {
namespace {

using course::CutMixCut;

int64_t area(const CutMixCut& c) {
  return static_cast<int64_t>(c.box[1] - c.box[0]) * (c.box[3] - c.box[2]);
}

TEST(TP3_1, LambdaIsRecomputedFromTheClippedBox) {
  std::mt19937 rng(1);
  for (const auto [h, w] : {std::pair<int64_t, int64_t>{32, 32}, {13, 17}}) {
    for (const float lambda : {0.1f, 0.3f, 0.5f, 0.8f}) {
      for (int draw = 0; draw < 200; ++draw) {
        const CutMixCut c = cutmix_cut(lambda, h, w, rng);
        ASSERT_TRUE(c.box[0] >= 0 && c.box[0] <= c.box[1] && c.box[1] <= h && c.box[2] >= 0 &&
                    c.box[2] <= c.box[3] && c.box[3] <= w)
            << "the box [" << c.box[0] << ", " << c.box[1] << ") x [" << c.box[2] << ", "
            << c.box[3] << ") must lie inside the " << h << " x " << w << " image";
        ASSERT_NEAR(c.lambda, 1.0 - static_cast<double>(area(c)) / (h * w), 1e-6)
            << "lambda must be 1 - (box area) / (image area) of the clipped box, for a drawn "
               "lambda of "
            << lambda;
      }
    }
  }
}

TEST(TP3_1, SidesFollowTheSquareRootAndEveryBorderIsReached) {
  std::mt19937 rng(2);
  const int64_t h = 32, w = 24;
  const float lambda = 0.3f;  // sides sqrt(0.7) of the image's: 26 x 20
  const int64_t full_h = static_cast<int64_t>(h * std::sqrt(0.7)),
                full_w = static_cast<int64_t>(w * std::sqrt(0.7));
  bool top = false, bottom = false, left = false, right = false;
  bool rows_clipped = false, columns_clipped = false;
  for (int draw = 0; draw < 500; ++draw) {
    const CutMixCut c = cutmix_cut(lambda, h, w, rng);
    ASSERT_LE(c.box[1] - c.box[0], full_h) << "rows: a box's side is sqrt(1 - lambda) H";
    ASSERT_LE(c.box[3] - c.box[2], full_w) << "columns: a box's side is sqrt(1 - lambda) W";
    if (c.box[0] > 0 && c.box[1] < h) {
      ASSERT_EQ(c.box[1] - c.box[0], full_h) << "a box clear of the top and bottom has "
                                                "sqrt(1 - lambda) H rows";
    }
    if (c.box[2] > 0 && c.box[3] < w) {
      ASSERT_EQ(c.box[3] - c.box[2], full_w) << "a box clear of the sides has sqrt(1 - lambda) W "
                                                "columns";
    }
    top |= c.box[0] == 0;
    bottom |= c.box[1] == h;
    left |= c.box[2] == 0;
    right |= c.box[3] == w;
    rows_clipped |= c.box[1] - c.box[0] < full_h;
    columns_clipped |= c.box[3] - c.box[2] < full_w;
  }
  EXPECT_TRUE(top && bottom && left && right)
      << "boxes must reach every border, the last row and column included";
  EXPECT_TRUE(rows_clipped && columns_clipped)
      << "the centre is any pixel, so some boxes stick out at the top or bottom, some at the "
         "sides, and are clipped";
}

TEST(TP3_1, EndsOfLambda) {
  std::mt19937 rng(3);
  const CutMixCut none = cutmix_cut(1.0f, 8, 8, rng);
  EXPECT_EQ(area(none), 0) << "lambda 1 cuts nothing";
  EXPECT_FLOAT_EQ(none.lambda, 1.0f);
  bool whole = false;
  for (int draw = 0; draw < 200 && !whole; ++draw) whole = area(cutmix_cut(0.0f, 8, 8, rng)) == 64;
  EXPECT_TRUE(whole) << "lambda 0 centred in the middle pastes the whole partner";
}

TEST(TP3_2, TargetsByHand) {
  // Labels 0 2 1 1 over 3 classes; partners 0<->3 and 1<->2; smoothing 0.3: off 0.1, on 0.8.
  const std::vector<float> t = mixed_targets({0, 2, 1, 1}, {0.75f, 0.5f, 1.0f, 0.0f}, 3, 0.3f);
  // Row by row: class 0 with class 1; class 2 with class 1; lambda 1, its own class 1;
  // lambda 0, all its partner's class 0.
  const float own = 0.8f, other = 0.1f;
  const std::vector<float> expected = {0.75f * own + 0.25f * other,
                                       0.75f * other + 0.25f * own,
                                       other,
                                       other,
                                       0.5f * other + 0.5f * own,
                                       0.5f * own + 0.5f * other,
                                       other,
                                       own,
                                       other,
                                       own,
                                       other,
                                       other};
  ASSERT_EQ(t.size(), expected.size());
  for (size_t k = 0; k < t.size(); ++k) {
    EXPECT_NEAR(t[k], expected[k], 1e-6f)
        << "row " << k / 3 << ", class " << k % 3
        << ": lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), smoothing putting "
           "e/classes on every other class";
  }
}

TEST(TP3_2, NoSmoothingGivesTheMixedOneHots) {
  const std::vector<float> t = mixed_targets({4, 4}, {0.3f, 0.7f}, 5, 0.0f);
  EXPECT_EQ(t, (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1}))
      << "a sample mixed with its own class keeps a one-hot target";
}

// Mean over rows of -sum_c t log softmax(z), in double.
double soft_loss(const std::vector<double>& z, const std::vector<float>& t, int64_t classes) {
  const int64_t n = static_cast<int64_t>(z.size()) / classes;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double top = z[i * classes], sum = 0;
    for (int64_t c = 0; c < classes; ++c) top = std::max(top, z[i * classes + c]);
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[i * classes + c] - top);
    for (int64_t c = 0; c < classes; ++c) {
      total -= t[i * classes + c] * (z[i * classes + c] - top - std::log(sum));
    }
  }
  return total / n;
}

TEST(TP3_3, GradientMatchesFiniteDifferences) {
  const int64_t n = 6, classes = 5;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(n * classes);
  for (float& z : logits) z = normal(rng);
  const std::vector<float> targets =
      mixed_targets({0, 1, 2, 3, 4, 0}, {0.9f, 0.6f, 0.2f, 0.2f, 0.6f, 0.9f}, classes, 0.1f);
  const Tensor z = Tensor::from_vector(logits, {n, classes});
  const Tensor t = Tensor::from_vector(targets, {n, classes});
  const float grad_loss = 2.5f;
  const std::vector<float> gradient =
      soft_target_gradient(course::soft_target_cross_entropy(z, t), t, grad_loss)
          .to_vector<float>();
  ASSERT_EQ(gradient.size(), logits.size());
  std::vector<double> point(logits.begin(), logits.end());
  for (size_t k = 0; k < point.size(); ++k) {
    const double h = 1e-5, saved = point[k];
    point[k] = saved + h;
    const double up = soft_loss(point, targets, classes);
    point[k] = saved - h;
    const double down = soft_loss(point, targets, classes);
    point[k] = saved;
    EXPECT_NEAR(gradient[k], grad_loss * (up - down) / (2 * h), 1e-5)
        << "logit " << k << ": d(grad_loss x mean loss)/dz = grad_loss (softmax - target) / N";
  }
}

TEST(TP3_4, SamplesByHand) {
  const std::vector<course::TarSample> samples = group_members({{"a/0001.jpg", 512, 10},
                                                                {"a/0001.cls", 1536, 1},
                                                                {"b.d/0002.seg.png", 2560, 7},
                                                                {"b.d/0002.cls", 3584, 1},
                                                                {"a/0001.txt", 4608, 3},
                                                                {"README", 5632, 4}});
  std::vector<std::string> keys;
  for (const course::TarSample& s : samples) keys.push_back(s.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/0001", "b.d/0002", "a/0001", "README"}))
      << "the key is the path up to the first dot of the file name (not of the folder), and a "
         "key that comes back after another is a new sample";
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].parts.size(), 2u);
  EXPECT_EQ(samples[0].parts.at("cls").offset, 1536);
  EXPECT_EQ(samples[1].parts.count("seg.png"), 1u)
      << "the extension is everything after the file name's first dot";
  EXPECT_EQ(samples[2].parts.count("txt"), 1u);
  EXPECT_EQ(samples[3].parts.count(""), 1u) << "a member without a dot has an empty extension";
}

TEST(TP3_4, GroupsAWrittenShardAsTheLibraryDoes) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/tp34";
  std::filesystem::create_directories(dir);
  course::TarShardWriter writer(dir, "shard", 100, 1 << 20);
  for (int i = 0; i < 7; ++i) writer.add("img." + std::to_string(i), {1, 2, 3}, i);
  writer.finish();
  const std::vector<course::TarMember> members =
      course::list_tar_members(dir + "/shard-000000.tar");
  const std::vector<course::TarSample> mine = group_members(members);
  const std::vector<course::TarSample> library = course::group_tar_members(members);
  ASSERT_EQ(mine.size(), library.size());
  for (size_t k = 0; k < mine.size(); ++k) {
    EXPECT_EQ(mine[k].key, library[k].key);
    ASSERT_EQ(mine[k].parts.size(), library[k].parts.size()) << mine[k].key;
    for (const auto& [extension, member] : library[k].parts) {
      EXPECT_EQ(mine[k].parts.at(extension).offset, member.offset) << member.name;
    }
  }
}

// 20 pages of 10 samples, pages numbered 3, 6, 9, ... in the file.
std::vector<int64_t> twenty_pages() {
  std::vector<int64_t> pages;
  for (int64_t i = 0; i < 200; ++i) pages.push_back(3 + 3 * (i / 10));
  return pages;
}

TEST(TP3_5, APermutationThatKeepsToGroupsOfPages) {
  const std::vector<int64_t> pages = twenty_pages();
  std::mt19937 rng(6);
  const std::vector<int64_t> order = quasi_random_pages(pages, 3, rng);
  std::vector<int64_t> sorted = order, all(pages.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(all.begin(), all.end(), 0);
  ASSERT_EQ(sorted, all) << "every sample exactly once";
  for (size_t first = 0; first < 180; first += 30) {
    std::set<int64_t> used;
    for (size_t k = first; k < first + 30; ++k) used.insert(pages[order[k]]);
    EXPECT_EQ(used.size(), 3u) << "samples " << first << " to " << first + 29
                               << " must come from one group of 3 pages";
  }
}

TEST(TP3_5, PagesAndTheSamplesOfAGroupAreShuffled) {
  const std::vector<int64_t> pages = twenty_pages();
  std::set<std::set<int64_t>> first_groups;
  int64_t page_changes = 0;
  for (uint32_t seed = 0; seed < 10; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<int64_t> order = quasi_random_pages(pages, 3, rng);
    first_groups.insert({pages[order[0]], pages[order[10]], pages[order[20]]});
    for (size_t k = 1; k < 30; ++k) page_changes += pages[order[k]] != pages[order[k - 1]];
  }
  EXPECT_GT(first_groups.size(), 5u) << "the pages are shuffled: the first group changes";
  // Samples of 3 pages shuffled together change page at about 2/3 of the steps (~19 of 29).
  EXPECT_GT(page_changes, 10 * 12)
      << "the samples of a group are shuffled together, not page after page";
  std::mt19937 rng(1);
  const std::vector<int64_t> whole = quasi_random_pages(pages, 50, rng);
  std::set<int64_t> first_ten;
  for (size_t k = 0; k < 10; ++k) first_ten.insert(pages[whole[k]]);
  EXPECT_GT(first_ten.size(), 5u) << "with every page in memory the whole file is shuffled";
}

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
