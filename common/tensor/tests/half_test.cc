// f16/bf16 conversions: known bit patterns, and every rounding checked against an independent
// reference that picks the nearest representable value from a table of all of them.
#include "common/tensor/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace course {
namespace {

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(0.1f).bits, 0x2e66);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);               // largest finite
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);               // still rounds down
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);               // halfway to 2^16: overflows to inf
  EXPECT_EQ(Half(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(Half(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(Half(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie between 0 and 2^-24: to even (0)
  EXPECT_EQ(Half(std::ldexp(3.0f, -25)).bits, 0x0002);  // tie between 1 and 2 ulps: to even (2)
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);  // tie: to even mantissa
  EXPECT_EQ(Half(1.0f + std::ldexp(3.0f, -11)).bits, 0x3c02);  // tie: to even mantissa
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(Half(std::nanf("")).bits & 0x7c00, 0x7c00);
  EXPECT_NE(Half(std::nanf("")).bits & 0x03ff, 0);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3555)), 0.333251953125f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half::from_bits(0x7e00))));
}

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(3.14159265f).bits, 0x4049);
  EXPECT_EQ(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);  // tie: to even
  EXPECT_EQ(BFloat16(1.0f + std::ldexp(3.0f, -8)).bits, 0x3f82);  // tie: to even
  EXPECT_EQ(BFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(BFloat16(3.4e38f).bits, 0x7f80);  // rounds past the largest finite bf16: inf
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0xc0a0)), -5.0f);
}

// Every non-NaN 16-bit pattern survives a round trip through float.
template <class T>
void expect_exact_round_trip() {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = static_cast<float>(T::from_bits(static_cast<uint16_t>(bits)));
    if (std::isnan(value)) continue;
    ASSERT_EQ(T(value).bits, bits) << "pattern 0x" << std::hex << bits;
  }
}

TEST(Half, RoundTripsEveryPattern) { expect_exact_round_trip<Half>(); }
TEST(BFloat16, RoundTripsEveryPattern) { expect_exact_round_trip<BFloat16>(); }

// Reference rounding: the nearest of all finite non-negative values (ties to the even pattern),
// with overflow to infinity past the halfway point above the largest finite value.
template <class T>
uint16_t reference_round(float value, const std::vector<std::pair<double, uint16_t>>& table,
                         double overflow) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= overflow) return sign | static_cast<uint16_t>(T(INFINITY).bits);
  auto upper = std::lower_bound(table.begin(), table.end(), std::make_pair(magnitude, uint16_t{0}));
  if (upper == table.end()) return sign | table.back().second;  // between max and overflow
  if (upper == table.begin()) return sign | upper->second;
  auto lower = upper - 1;
  const double below = magnitude - lower->first, above = upper->first - magnitude;
  if (below < above) return sign | lower->second;
  if (above < below) return sign | upper->second;
  return sign | ((lower->second & 1) == 0 ? lower->second : upper->second);
}

template <class T>
void expect_nearest_even_rounding(double overflow) {
  std::vector<std::pair<double, uint16_t>> table;
  for (uint32_t bits = 0; bits < 0x8000; ++bits) {
    const float v = static_cast<float>(T::from_bits(static_cast<uint16_t>(bits)));
    if (std::isfinite(v)) table.emplace_back(v, static_cast<uint16_t>(bits));
  }
  std::sort(table.begin(), table.end());
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  int checked = 0;
  while (checked < 200000) {
    const uint32_t raw = any_bits(rng);
    float value;
    std::memcpy(&value, &raw, sizeof value);
    if (!std::isfinite(value)) continue;
    // Bias towards the representable range so subnormals, normals and overflow all occur.
    int exponent = 0;
    value = std::ldexp(std::frexp(value, &exponent), static_cast<int>(raw % 60) - 30);
    ASSERT_EQ(T(value).bits, reference_round<T>(value, table, overflow)) << "value " << value;
    ++checked;
  }
}

TEST(Half, RoundsToNearestEven) { expect_nearest_even_rounding<Half>(65520.0); }
TEST(BFloat16, RoundsToNearestEven) {
  expect_nearest_even_rounding<BFloat16>(std::ldexp(static_cast<double>(0x1ff), 119));
}

}  // namespace
}  // namespace course
