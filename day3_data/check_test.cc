// `bazel test //day3_data:check`: the trainee's day-3 exercises against independent references.
//   TP3.1: the cut's area against its lambda (exactly), its sides against sqrt(1 - lambda),
//          boxes cut by every border, the ends lambda = 0 and 1;
//   TP3.2: targets worked out by hand (partners, smoothing, the lambda on the right label);
//   TP3.3: the gradient against central finite differences of a double-precision loss;
//   TP3.4: samples formed by hand, and as the library groups a shard written by libarchive;
//   TP3.5: a permutation that keeps to its groups of pages, shuffles the pages and the samples
//          within each group.
// The hyper-parameter search's exercises (TP3.6-TP3.8) are checked in hpo_check_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

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
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{32, 32}, {13, 17}}) {
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

}  // namespace
}  // namespace day3
