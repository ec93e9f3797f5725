// The day-4 check of Part 9's 1-bit compression, TP4.22, DeepSpeed's: a tensor computed by hand
// (a zero, signs of both kinds), the residual added back and carried, irregular tensors over
// five calls against a reference in double, and the bookkeeping identity error feedback keeps
// (what was sent plus what is carried is what was given). Plausible wrong answers fail: no error
// feedback, the residual not kept, the mean magnitude instead of the root mean square (1-bit
// Adam's paper's figure, not DeepSpeed's), the root of the sum over n - 1, zero sent as negative,
// the scale taken from the values without the residual.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "day4_large_models/exercises.h"

namespace day4 {
namespace {

Tensor tensor_of(const std::vector<float>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

void expect_values(const Tensor& t, const std::vector<float>& want, const char* what) {
  const std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << what << " " << i;
}

TEST(TP4_22, ATensorByHand) {
  // {3, -1, 0, 1, -3}: scale sqrt((9 + 1 + 0 + 1 + 9) / 5) = 2, the zero sent as +2.
  Tensor error = tensor_of({0, 0, 0, 0, 0});
  const Tensor sent = onebit_compress(tensor_of({3, -1, 0, 1, -3}), error);
  expect_values(sent, {2.0f, -2.0f, 2.0f, 2.0f, -2.0f}, "compressed");
  expect_values(error, {1.0f, 1.0f, -2.0f, -1.0f, -1.0f}, "residual");
}

TEST(TP4_22, TheResidualIsAddedBackAndCarried) {
  // v = {1, 1, 1, 1} + {4, -2, 0, -4} = {5, -1, 1, -3}: scale sqrt(36 / 4) = 3.
  Tensor error = tensor_of({4.0f, -2.0f, 0.0f, -4.0f});
  const Tensor sent = onebit_compress(tensor_of({1, 1, 1, 1}), error);
  expect_values(sent, {3.0f, -3.0f, 3.0f, -3.0f}, "compressed");
  expect_values(error, {2.0f, 2.0f, -2.0f, 0.0f}, "residual");
}

// The reference: one call on values x and residual e, the squares summed in double.
std::vector<float> reference_compress(const std::vector<float>& x, std::vector<float>& e) {
  double squares = 0;
  for (size_t i = 0; i < x.size(); ++i) squares += static_cast<double>(x[i] + e[i]) * (x[i] + e[i]);
  const auto scale = static_cast<float>(std::sqrt(squares / static_cast<double>(x.size())));
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i] + e[i];
    out[i] = v < 0 ? -scale : scale;
    e[i] = v - out[i];
  }
  return out;
}

// Tensors of 1000, 7 and 1 values, of their own magnitudes, with zeros; five calls on new values,
// the residual carried from call to call.
TEST(TP4_22, IrregularTensorsOverFiveCallsAgainstAReference) {
  std::mt19937 rng(22);
  std::normal_distribution<float> normal(0.2f, 1.0f);
  for (const size_t n : {1000, 7, 1}) {
    std::vector<float> want_error(n, 0.0f);
    Tensor error = tensor_of(want_error);
    for (int call = 0; call < 5; ++call) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) {
        x[i] = i % 17 == 3 ? 0.0f : normal(rng) * static_cast<float>(1 + i / 64);
      }
      const std::vector<float> want = reference_compress(x, want_error);
      const std::vector<float> got = onebit_compress(tensor_of(x), error).to_vector<float>();
      const std::vector<float> got_error = error.to_vector<float>();
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
            << n << " values, call " << call << ", element " << i;
        ASSERT_NEAR(got_error[i], want_error[i], 1e-4f * (1 + std::fabs(want_error[i])))
            << n << " values: the residual after call " << call << ", element " << i;
      }
    }
  }
}

// Error feedback loses nothing for good: after K calls on the same values, what was sent plus
// what is carried is K times the values.
TEST(TP4_22, WhatWasSentPlusWhatIsCarriedIsWhatWasGiven) {
  const std::vector<float> x = {0.9f, -0.05f, 0.3f, -2.0f, 0.0f, 0.7f, 1.1f, -0.4f, 0.02f};
  Tensor values = tensor_of(x), error = tensor_of(std::vector<float>(x.size(), 0.0f));
  std::vector<double> sent(x.size(), 0.0);
  constexpr int kCalls = 20;
  for (int call = 0; call < kCalls; ++call) {
    const std::vector<float> out = onebit_compress(values, error).to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) sent[i] += out[i];
  }
  const std::vector<float> carried = error.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(sent[i] + carried[i], kCalls * x[i], 1e-4) << "element " << i;
  }
}

}  // namespace
}  // namespace day4
