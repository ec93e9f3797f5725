// The row kernels' lanes (row_lanes.h): the CPU's one-thread lanes must add in exactly the
// order a warp does (lane l folding elements l, l + 32, ... and a butterfly of shuffles), so a
// GPU's row sums equal the CPU's. The warp is emulated here as 32 values and an exchange of
// partners l ^ width; the association is compared as text, so any other order fails.
#include "common/kernels/row_lanes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace course::ops {
namespace {

struct Parenthesise {
  std::string operator()(const std::string& a, const std::string& b) const {
    return "(" + a + "+" + b + ")";
  }
};

// What each of a warp's lanes holds after WarpRowLanes::fold (row_lanes_cuda.cuh).
template <class V, class F, class Op>
std::vector<V> emulated_warp(int64_t count, V identity, F f, Op op) {
  std::vector<V> lane(kRowLanes, identity);
  for (int l = 0; l < kRowLanes; ++l) {
    for (int64_t j = l; j < count; j += kRowLanes) lane[l] = op(lane[l], f(j));
  }
  for (int width = kRowLanes / 2; width > 0; width /= 2) {
    const std::vector<V> before = lane;
    for (int l = 0; l < kRowLanes; ++l) lane[l] = op(before[l], before[l ^ width]);
  }
  return lane;
}

TEST(RowLanes, TheCpuAddsInTheWarpsOrder) {
  const auto name = [](int64_t j) { return std::to_string(j); };
  for (int64_t count : {0, 1, 5, 31, 32, 33, 64, 95, 1000}) {
    const std::string host = HostRowLanes{}.fold(count, std::string("0"), name, Parenthesise{});
    EXPECT_EQ(host, emulated_warp(count, std::string("0"), name, Parenthesise{})[0])
        << count << " elements";
  }
}

TEST(RowLanes, EveryLaneOfTheWarpEndsWithTheCpusSum) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  std::vector<float> values(777);
  for (float& v : values) v = normal(rng);
  const auto value = [&](int64_t j) { return values[j]; };
  const float host = HostRowLanes{}.sum(777, value);
  for (float lane : emulated_warp(777, 0.0f, value, Plus{})) EXPECT_EQ(lane, host);
  double reference = 0.0;
  for (float v : values) reference += v;
  EXPECT_NEAR(host, reference, 1e-3 * std::abs(reference) + 1e-2);
}

TEST(RowLanes, MaximaAndPairs) {
  const std::vector<float> values = {-3.0f, 7.5f, -INFINITY, 2.0f, 7.25f};
  const auto value = [&](int64_t j) { return values[j]; };
  EXPECT_EQ(HostRowLanes{}.max(5, value), 7.5f);
  EXPECT_EQ(HostRowLanes{}.max(0, value), -INFINITY);
  EXPECT_EQ(HostRowLanes{}.sum(0, value), 0.0f);
  std::vector<float> long_row(100);
  for (int j = 0; j < 100; ++j) long_row[j] = j % 7 == 3 ? 50.0f - j : -1.0f * j;
  EXPECT_EQ(HostRowLanes{}.max(100, [&](int64_t j) { return long_row[j]; }), 47.0f);
  const FloatPair pair = HostRowLanes{}.sum_pair(100, [](int64_t j) {
    return FloatPair{static_cast<float>(j), -2.0f * j};
  });
  EXPECT_EQ(pair.first, 4950.0f);
  EXPECT_EQ(pair.second, -9900.0f);
}

// fmaxf's rule, a NaN losing to any number, wherever the NaN sits in the lane order: first in a
// lane, between numbers, in the tail, and in the butterfly's partner lanes.
TEST(RowLanes, MaximumIgnoresNaNLikeFmaxf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Maximum{}(nan, -2.0f), -2.0f);
  EXPECT_EQ(Maximum{}(-2.0f, nan), -2.0f);
  EXPECT_TRUE(std::isnan(Maximum{}(nan, nan)));
  for (int nan_every : {1, 2, 3, 32, 33}) {
    std::vector<float> row(71);
    float expected = -INFINITY;
    for (int j = 0; j < 71; ++j) {
      row[j] = j % nan_every == 0 ? nan : std::sin(1.7f * j) * (j - 35);
      if (j % nan_every != 0) expected = std::fmax(expected, row[j]);
    }
    const float top = HostRowLanes{}.max(71, [&](int64_t j) { return row[j]; });
    // A row of NaN only leaves the fold's identity, -inf, as fmaxf would.
    EXPECT_EQ(top, expected) << "a NaN every " << nan_every << " elements";
  }
}

}  // namespace
}  // namespace course::ops
