// The day-4 check of Part 9's 1-bit compression, TP4.22: chunks computed by hand (a short last
// chunk, a zero, signs of both kinds), the residual added back and carried, irregular tensors
// over five calls against a reference in double, and the bookkeeping identity error feedback
// keeps (what was sent plus what is carried is what was given). Plausible wrong answers fail: no
// error feedback, the residual not kept, one scale for the whole tensor, the short chunk
// averaged over the full chunk length, zero sent as negative, a root-mean-square scale.
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

TEST(TP4_22, ChunksByHand) {
  // Chunks of 4: {3, -1, 0, 2}: scale (3 + 1 + 0 + 2) / 4 = 1.5, the zero sent as +1.5; the
  // short last chunk {-4, 1}: scale (4 + 1) / 2 = 2.5.
  Tensor error = tensor_of({0, 0, 0, 0, 0, 0});
  const Tensor sent = onebit_compress(tensor_of({3, -1, 0, 2, -4, 1}), error, 4);
  expect_values(sent, {1.5f, -1.5f, 1.5f, 1.5f, -2.5f, 2.5f}, "compressed");
  expect_values(error, {1.5f, 0.5f, -1.5f, 0.5f, -1.5f, -1.5f}, "residual");
}

TEST(TP4_22, TheResidualIsAddedBackAndCarried) {
  // v = {1, 1, 1, 1} + {0.5, -2, 0, 0.25} = {1.5, -1, 1, 1.25}: scale 4.75 / 4 = 1.1875.
  Tensor error = tensor_of({0.5f, -2.0f, 0.0f, 0.25f});
  const Tensor sent = onebit_compress(tensor_of({1, 1, 1, 1}), error, 4);
  expect_values(sent, {1.1875f, -1.1875f, 1.1875f, 1.1875f}, "compressed");
  expect_values(error, {0.3125f, 0.1875f, -0.1875f, 0.0625f}, "residual");
}

// The reference: one call on values x and residual e, in double where it sums.
std::vector<float> reference_compress(const std::vector<float>& x, std::vector<float>& e,
                                      size_t chunk) {
  std::vector<float> out(x.size());
  for (size_t begin = 0; begin < x.size(); begin += chunk) {
    const size_t end = std::min(begin + chunk, x.size());
    double total = 0;
    for (size_t i = begin; i < end; ++i) total += std::fabs(x[i] + e[i]);
    const auto scale = static_cast<float>(total / static_cast<double>(end - begin));
    for (size_t i = begin; i < end; ++i) {
      const float v = x[i] + e[i];
      out[i] = v >= 0 ? scale : -scale;
      e[i] = v - out[i];
    }
  }
  return out;
}

// 1000 values in chunks of 64 (the last of 40), each chunk of its own magnitude, with zeros;
// five calls on new values, the residual carried from call to call.
TEST(TP4_22, IrregularTensorsOverFiveCallsAgainstAReference) {
  constexpr size_t kN = 1000, kChunk = 64;
  std::mt19937 rng(22);
  std::normal_distribution<float> normal(0.2f, 1.0f);
  std::vector<float> want_error(kN, 0.0f);
  Tensor error = tensor_of(want_error);
  for (int call = 0; call < 5; ++call) {
    std::vector<float> x(kN);
    for (size_t i = 0; i < kN; ++i) {
      x[i] = i % 17 == 3 ? 0.0f : normal(rng) * static_cast<float>(1 + i / kChunk);
    }
    const std::vector<float> want = reference_compress(x, want_error, kChunk);
    const std::vector<float> got = onebit_compress(tensor_of(x), error, kChunk).to_vector<float>();
    const std::vector<float> got_error = error.to_vector<float>();
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
          << "call " << call << ", element " << i << " (chunk " << i / kChunk << ")";
      ASSERT_NEAR(got_error[i], want_error[i], 1e-4f * (1 + std::fabs(want_error[i])))
          << "the residual after call " << call << ", element " << i;
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
    const std::vector<float> out = onebit_compress(values, error, 4).to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) sent[i] += out[i];
  }
  const std::vector<float> carried = error.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(sent[i] + carried[i], kCalls * x[i], 1e-4) << "element " << i;
  }
}

}  // namespace
}  // namespace day4
