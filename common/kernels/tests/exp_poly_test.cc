// exp_poly, tanh_poly and sigmoid_poly against the double-precision library functions: every
// float in steps across the whole range, the edges of its range, infinities and NaN.
#include "common/kernels/exp_poly.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace course::ops {
namespace {

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return std::abs(static_cast<int64_t>(ia) - ib);
}

// Every 97th float from 1e-30 up to `limit` (about 86,000 in each binade) and its negative.
template <class Check>
void over_floats(float limit, Check check) {
  for (float x = 1e-30f; x < limit;) {
    check(x);
    check(-x);
    int32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits += 97;
    std::memcpy(&x, &bits, sizeof x);
  }
}

TEST(ExpPoly, WithinTwoUlpsOverTheWholeRange) {
  int64_t worst = 0;
  float worst_x = 0;
  over_floats(88.0f, [&](float x) {
    if (x < -87.0f) return;  // flushed to 0
    const int64_t d = ulps(exp_poly(x), static_cast<float>(std::exp(static_cast<double>(x))));
    if (d > worst) worst = d, worst_x = x;
  });
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
  EXPECT_EQ(exp_poly(0.0f), 1.0f);
}

TEST(ExpPoly, FlushesBelowTheNormalRangeSaturatesAboveAndKeepsNaN) {
  EXPECT_EQ(exp_poly(-87.01f), 0.0f);
  EXPECT_EQ(exp_poly(-100.0f), 0.0f);
  EXPECT_EQ(exp_poly(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_LE(ulps(exp_poly(-87.0f), std::exp(-87.0f)), 2);
  EXPECT_EQ(exp_poly(1000.0f), exp_poly(88.0f));
  EXPECT_EQ(exp_poly(std::numeric_limits<float>::infinity()), exp_poly(88.0f));
  EXPECT_TRUE(std::isfinite(exp_poly(88.0f)));
  EXPECT_LE(ulps(exp_poly(88.0f), std::exp(88.0f)), 2);
  EXPECT_TRUE(std::isnan(exp_poly(std::numeric_limits<float>::quiet_NaN())));
}

TEST(TanhPoly, WithinTwoTenMillionthsAndSaturates) {
  double worst = 0;
  float worst_x = 0;
  over_floats(50.0f, [&](float x) {
    const double d = std::abs(tanh_poly(x) - std::tanh(static_cast<double>(x)));
    if (d > worst) worst = d, worst_x = x;
  });
  EXPECT_LE(worst, 2e-7) << "at x = " << worst_x;  // 3 units in the last place of 1
  EXPECT_EQ(tanh_poly(0.0f), 0.0f);
  EXPECT_EQ(tanh_poly(44.0f), 1.0f);
  EXPECT_EQ(tanh_poly(-44.0f), -1.0f);
  EXPECT_EQ(tanh_poly(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(tanh_poly(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(tanh_poly(std::numeric_limits<float>::quiet_NaN())));
}

TEST(SigmoidPoly, WithinTwoTenMillionthsAndNeverSubnormal) {
  double worst = 0;
  float worst_x = 0;
  over_floats(80.0f, [&](float x) {
    const double d = std::abs(sigmoid_poly(x) - 1.0 / (1.0 + std::exp(-static_cast<double>(x))));
    if (d > worst) worst = d, worst_x = x;
  });
  EXPECT_LE(worst, 2e-7) << "at x = " << worst_x;
  EXPECT_EQ(sigmoid_poly(0.0f), 0.5f);
  EXPECT_EQ(sigmoid_poly(std::numeric_limits<float>::infinity()), 1.0f);
  for (float x : {-80.5f, -100.0f, -1e30f, -std::numeric_limits<float>::infinity()}) {
    EXPECT_GE(sigmoid_poly(x), std::numeric_limits<float>::min()) << x;  // a normal float
    EXPECT_LE(sigmoid_poly(x), 2e-35f) << x;
  }
  EXPECT_TRUE(std::isnan(sigmoid_poly(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace course::ops
