// Dropout's mask (common/kernels/dropout.h): Philox4x32-10 against the known-answer vectors that
// its authors' Random123 library publishes; the mask's statistics over a million draws (the
// fraction dropped, overall and for each of a Philox call's four words, pairs of neighbours and
// pairs of draws dropped together, as independent draws would); the same bytes on every device,
// by packets or element by element, for lengths that end in a partial group; the kept elements
// scaled exactly and the others zero; the mask the same whatever the dtype.
#include "common/kernels/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/kernels/dropout_ops.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/philox.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using testing::random_tensor;
using testing::stored_bytes;
using testing::to_floats;

TEST(Philox, GivesRandom123sKnownAnswers) {
  const auto words = [](uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                        uint32_t k1) {
    const ops::PhiloxWords w = ops::philox4x32(c0, c1, c2, c3, k0, k1);
    return std::vector<uint32_t>(w.v, w.v + 4);
  };
  EXPECT_EQ(words(0, 0, 0, 0, 0, 0),
            (std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  const uint32_t ones = 0xffffffff;
  EXPECT_EQ(words(ones, ones, ones, ones, ones, ones),
            (std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(words(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0),
            (std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  // The 64-bit form splits its counter and key low word first.
  const ops::PhiloxWords split =
      ops::philox4x32(0x85a308d3243f6a88, 0x0370734413198a2e, 0x299f31d0a4093822);
  EXPECT_EQ(split.v[0], 0xd16cfe09u);
  EXPECT_EQ(split.v[3], 0x24126ea1u);
}

class DropoutOnEveryDevice : public testing::DeviceTest {};

// 1,001 elements: a last group of 1 (f32) or 1 of 8 (16-bit).
TEST_P(DropoutOnEveryDevice, DrawsTheCpusMask) {
  const DropoutDraw draw{.seed = 11, .offset = 3, .p = 0.3f};
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({7, 143}, dtype, Device::cpu(), 4, -2, 2).tensor;
    EXPECT_EQ(stored_bytes(apply_dropout(x.to(device()), draw)),
              stored_bytes(apply_dropout(x, draw)));
  }
}

COURSE_INSTANTIATE_DEVICE_TESTS(DropoutOnEveryDevice);

// A GPU's packets (run here on the CPU's threads) give the element loop's bytes.
template <class T>
void expect_packets_as_elements(DType dtype) {
  SCOPED_TRACE(dtype_name(dtype));
  const Tensor x = random_tensor({1001}, dtype, Device::cpu(), 5, -2, 2).tensor;
  Tensor by_packets = Tensor::empty({1001}, dtype), by_elements = Tensor::empty({1001}, dtype);
  const ops::DropoutKeys keys{.seed = 9, .offset = 1, .threshold = 1u << 31, .scale = 2.0f};
  const ops::DropoutGroups<T, true> packets{x.data_as<T>(), by_packets.data_as<T>(), 1001, keys};
  const ops::DropoutGroups<T, false> elements{x.data_as<T>(), by_elements.data_as<T>(), 1001, keys};
  for_each_host_index(packets.groups(), packets);
  for_each_host_index(elements.groups(), elements);
  EXPECT_EQ(stored_bytes(by_packets), stored_bytes(by_elements));
}

TEST(Dropout, PacketsGiveTheElementLoopsBytes) {
  expect_packets_as_elements<float>(DType::kF32);
  expect_packets_as_elements<BFloat16>(DType::kBF16);
  expect_packets_as_elements<Half>(DType::kF16);
}

// A GPU takes packets where its operands are aligned to them, elements where not (a view that
// starts 12 bytes into its storage).
TEST(Dropout, AGpuTakesPacketsOfAlignedOperandsOnly) {
  const Tensor x = Tensor::empty({9, 3});
  for (const auto& [tensor, packets] : {std::pair{x, true}, {x.slice(1, 9), false}}) {
    LaunchLog log;
    apply_dropout(tensor, {.p = 0.5f});
    ASSERT_EQ(log.launches().size(), 1u);
    const std::string& kernel = log.launches()[0].kernel;
    EXPECT_NE(kernel.find(packets ? "DropoutGroups<float, true>" : "DropoutGroups<float, false>"),
              std::string::npos)
        << kernel;
  }
}

TEST(Dropout, KeepsElementsScaledExactlyAndZeroesTheRest) {
  const testing::TestTensor x = random_tensor({4096}, DType::kF32, Device::cpu(), 6, 0.5f, 3);
  for (float p : {0.0f, 0.1f, 0.5f}) {
    const std::vector<float> y = to_floats(apply_dropout(x.tensor, {.seed = 2, .p = p}));
    const float scale = 1.0f / (1.0f - p);
    int64_t dropped = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0.0f) {
        ++dropped;
      } else {
        ASSERT_EQ(y[i], x.values[i] * scale) << "element " << i << ", p " << p;
      }
    }
    // Binomial: 4096 draws, sd at most 0.0078.
    EXPECT_NEAR(static_cast<double>(dropped) / 4096, p, 0.04) << "p " << p;
  }
  EXPECT_THROW(apply_dropout(x.tensor, {.p = 1.0f}), Error);
  EXPECT_THROW(apply_dropout(x.tensor, {.p = -0.1f}), Error);
}

// An element's fate depends on its index alone: the same elements dropped in f32 (4 to a group)
// and in the 16-bit types (8 to a group).
TEST(Dropout, TheMaskIsTheSameWhateverTheDtype) {
  Tensor ones = Tensor::empty({999});
  fill_(ones, 1.0);
  const DropoutDraw draw{.seed = 3, .offset = 5, .p = 0.4f};
  const std::vector<float> f32 = to_floats(apply_dropout(ones, draw));
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::vector<float> narrow = to_floats(apply_dropout(cast(ones, dtype), draw));
    for (size_t i = 0; i < f32.size(); ++i)
      ASSERT_EQ(narrow[i] == 0.0f, f32[i] == 0.0f) << dtype_name(dtype) << ", element " << i;
  }
}

// Over 2^20 elements at p = 0.3, each statistic within 5 standard deviations of what independent
// draws give: the fraction dropped, for all and for each word of a Philox call (i % 4); the
// fraction of neighbours (i, i + 1) dropped together, across and within a call's words; and of
// elements dropped by two draws of one seed, and by one draw of two seeds.
TEST(Dropout, MasksAreIndependentDraws) {
  constexpr int64_t n = int64_t{1} << 20;
  constexpr double p = 0.3;
  Tensor ones = Tensor::empty({n});
  fill_(ones, 1.0);
  const auto mask = [&](uint64_t seed, uint64_t offset) {
    const std::vector<float> y = to_floats(
        apply_dropout(ones, {.seed = seed, .offset = offset, .p = static_cast<float>(p)}));
    std::vector<bool> dropped(y.size());
    for (size_t i = 0; i < y.size(); ++i) dropped[i] = y[i] == 0.0f;
    return dropped;
  };
  const auto expect_fraction = [](int64_t count, int64_t trials, double q, const char* what) {
    const double sd = std::sqrt(q * (1 - q) / static_cast<double>(trials));
    EXPECT_NEAR(static_cast<double>(count) / static_cast<double>(trials), q, 5 * sd) << what;
  };
  const std::vector<bool> a = mask(7, 0), next = mask(7, 1), other_seed = mask(8, 0);
  int64_t dropped = 0, by_word[4] = {}, neighbours = 0, both_draws = 0, both_seeds = 0;
  for (int64_t i = 0; i < n; ++i) {
    dropped += a[i];
    by_word[i % 4] += a[i];
    if (i + 1 < n) neighbours += a[i] && a[i + 1];
    both_draws += a[i] && next[i];
    both_seeds += a[i] && other_seed[i];
  }
  expect_fraction(dropped, n, p, "dropped");
  for (int word = 0; word < 4; ++word) expect_fraction(by_word[word], n / 4, p, "of one word");
  expect_fraction(neighbours, n - 1, p * p, "neighbours dropped together");
  expect_fraction(both_draws, n, p * p, "dropped by the next draw too");
  expect_fraction(both_seeds, n, p * p, "dropped under another seed too");
}

}  // namespace
}  // namespace course
