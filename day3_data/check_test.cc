// `bazel test //day3_data:check`: the trainee's day-3 exercises against independent references.
//   TP3.2: targets worked out by hand (partners, smoothing, the lambda on the right label), and
//          the course's copy that mixes labels on the device;
//   TP3.3: the gradient against central finite differences of a double-precision loss;
//   TP3.4: samples formed by hand, and as the library groups a shard written by libarchive;
//   TP3.5: a permutation that keeps to its groups of pages, shuffles the pages and the samples
//          within each group, on pages of equal and of uneven sizes (one-sample pages, gaps in
//          the page numbers, a file of one page, an empty file).
// CutMix's cut (TP3.1) is checked in cutmix_check_test.cc, the hyper-parameter search's
// exercises (TP3.8-TP3.10) in hpo_check_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "common/kernels/batch_mix.h"
#include "common/kernels/soft_cross_entropy.h"
#include "day3_data/exercises.h"

namespace day3 {
namespace {

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

// The lab mixes a batch's labels on the device with the course's copy (--aug-device): it must give
// your targets. Labels on both ends of the classes, an odd count (the middle sample is its own
// partner), lambdas of 0, 1 and between, smoothing.
TEST(TP3_2, EqualsTheCoursesCopyOnTheDevice) {
  const std::vector<int64_t> labels = {0, 6, 3, 6, 0, 2, 5};
  const std::vector<float> lambdas = {1.0f, 0.0f, 0.37f, 0.5f, 0.81f, 0.05f, 0.66f};
  const int64_t classes = 7, n = static_cast<int64_t>(labels.size());
  for (const float smoothing : {0.0f, 0.2f}) {
    const std::vector<float> yours = mixed_targets(labels, lambdas, classes, smoothing);
    const std::vector<float> course =
        course::mixed_soft_targets(Tensor::from_vector(labels, {n}).to(course::Device::sim(0)),
                                   Tensor::from_vector(lambdas, {n}).to(course::Device::sim(0)),
                                   classes, smoothing)
            .to_vector<float>();
    ASSERT_EQ(yours.size(), course.size());
    for (size_t k = 0; k < yours.size(); ++k) {
      EXPECT_NEAR(yours[k], course[k], 1e-6f)
          << "row " << k / classes << ", class " << k % classes << ", smoothing " << smoothing;
    }
  }
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

// Pages of uneven sizes, as a packed file has them: gaps in the page numbers (pages that hold
// no sample), pages of one sample, and sizes from 1 to 15, in file order.
std::vector<int64_t> uneven_pages() {
  const std::vector<std::pair<int64_t, int64_t>> page_sizes = {
      {0, 7},   {1, 1},  {4, 12}, {5, 3},  {6, 1},  {9, 9}, {10, 2},
      {12, 15}, {13, 1}, {17, 5}, {18, 8}, {20, 1}, {23, 4}};
  std::vector<int64_t> pages;
  for (const auto& [page, size] : page_sizes) pages.insert(pages.end(), size, page);
  return pages;
}

// Why `order` is not every sample once, in runs that each hold every sample of
// `pages_in_memory` pages (the last run of the pages left over); empty when it is.
std::string group_error(const std::vector<int64_t>& order, const std::vector<int64_t>& pages,
                        int64_t pages_in_memory) {
  std::map<int64_t, int64_t> page_size;
  for (const int64_t page : pages) ++page_size[page];
  std::vector<int64_t> sorted = order, all(pages.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(all.begin(), all.end(), 0);
  if (sorted != all) return "not every sample exactly once";
  std::set<int64_t> run_pages;
  int64_t left_in_run = 0, pages_done = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int64_t page = pages[order[k]];
    if (run_pages.insert(page).second) left_in_run += page_size[page];
    if (static_cast<int64_t>(run_pages.size()) > pages_in_memory) {
      return "the run of samples that ends at position " + std::to_string(k) + " mixes " +
             std::to_string(run_pages.size()) + " pages before it has all the samples of " +
             std::to_string(pages_in_memory);
    }
    --left_in_run;
    const bool whole_group = static_cast<int64_t>(run_pages.size()) == pages_in_memory ||
                             pages_done + static_cast<int64_t>(run_pages.size()) ==
                                 static_cast<int64_t>(page_size.size());
    if (left_in_run == 0 && whole_group) {
      pages_done += static_cast<int64_t>(run_pages.size());
      run_pages.clear();
    }
  }
  return "";
}

TEST(TP3_5, GroupsAreWholePagesWhateverTheirSizes) {
  const std::vector<int64_t> pages = uneven_pages();
  for (const int64_t in_memory : {1, 2, 3, 4, 5, 13, 20}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng(seed);
      const std::string error =
          group_error(quasi_random_pages(pages, in_memory, rng), pages, in_memory);
      ASSERT_EQ(error, "") << "13 pages of 1 to 15 samples, " << in_memory
                           << " in memory: groups are made of pages, not of sample counts";
    }
  }
  std::mt19937 rng(7);
  const std::vector<int64_t> one_page(9, 4);
  EXPECT_EQ(group_error(quasi_random_pages(one_page, 3, rng), one_page, 3), "")
      << "a file of one page";
  EXPECT_TRUE(quasi_random_pages({}, 3, rng).empty()) << "an empty file has an empty order";
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
