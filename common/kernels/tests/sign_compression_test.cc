// 1-bit compression with error feedback against a naive host reference: chunks whose last one is
// mostly padding, signed values with exact zeros, an error carried over two calls, and the
// server's mean of several ranks' copies.
#include "common/kernels/sign_compression.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using testing::random_tensor;

// What one chunk becomes: scale = mean |x + e| over the valid elements, e = x + e - scale sign.
struct Reference {
  std::vector<float> scales, error, expanded;
  std::vector<bool> positive;
};

Reference compress_reference(const std::vector<float>& x, std::vector<float> error, int64_t chunk,
                             int64_t valid) {
  Reference r;
  const auto n = static_cast<int64_t>(x.size());
  r.positive.assign(n, true);
  r.expanded.assign(n, 0.0f);
  for (int64_t begin = 0; begin < n; begin += chunk) {
    double total = 0;
    int64_t count = 0;
    for (int64_t i = begin; i < std::min(begin + chunk, valid); ++i, ++count) {
      total += std::fabs(x[i] + error[i]);
    }
    const float scale = count > 0 ? static_cast<float>(total / count) : 0.0f;
    r.scales.push_back(scale);
    for (int64_t i = begin; i < std::min(begin + chunk, valid); ++i) {
      const float v = x[i] + error[i];
      r.positive[i] = v >= 0.0f;
      r.expanded[i] = r.positive[i] ? scale : -scale;
      error[i] = v - r.expanded[i];
    }
  }
  r.error = std::move(error);
  return r;
}

using SignCompressionTest = testing::DeviceTest;

TEST_P(SignCompressionTest, ChunksCompressToTheirMeanMagnitudeAndCarryTheirError) {
  constexpr int64_t kChunk = 24, kChunks = 3, kN = kChunk * kChunks, kValid = 53;
  auto x = random_tensor({kN}, DType::kF32, device(), 41, -2.0f, 1.0f);
  std::vector<float> values = x.values;
  values[3] = 0.0f;  // a zero is sent as +scale
  values[kChunk] = -0.0f;
  Tensor input = Tensor::from_vector(values, {kN}).to(device());
  Tensor error = zeros({kN}, DType::kF32, device());
  Tensor bits = Tensor::empty({kN / 8}, DType::kU8, device());
  Tensor scales = Tensor::empty({kChunks}, DType::kF32, device());
  std::vector<float> carried(kN, 0.0f);
  for (int call = 0; call < 2; ++call) {  // the second call starts from the first's error
    const Reference want = compress_reference(values, carried, kChunk, kValid);
    compress_signs_(input, error, bits, scales, kChunk, kValid);
    const std::vector<float> got_scales = scales.to(Device::cpu()).to_vector<float>();
    for (int64_t c = 0; c < kChunks; ++c) {
      EXPECT_NEAR(got_scales[c], want.scales[c], 1e-6f * (1 + want.scales[c])) << "chunk " << c;
    }
    Tensor expanded = Tensor::empty({kN}, DType::kF32, device());
    expand_signs(bits, scales, expanded, kChunk);
    const std::vector<float> got = expanded.to(Device::cpu()).to_vector<float>();
    const std::vector<float> got_error = error.to(Device::cpu()).to_vector<float>();
    for (int64_t i = 0; i < kValid; ++i) {
      ASSERT_EQ(got[i] > 0, want.positive[i] && want.scales[i / kChunk] > 0) << "element " << i;
      EXPECT_NEAR(got_error[i], want.error[i], 1e-5f) << "element " << i << ", call " << call;
    }
    for (int64_t i = kValid; i < kN; ++i) ASSERT_EQ(got_error[i], 0.0f) << "padding " << i;
    carried = want.error;
  }
  // The last chunk holds 5 valid elements of 24: its scale is their mean, not diluted by padding.
  EXPECT_GT(scales.to(Device::cpu()).to_vector<float>()[2], 0.1f);
}

// Chunks of several pieces (a rank's share of a large buffer is summed in pieces of 4096), the
// valid elements ending inside the second chunk's second piece.
TEST_P(SignCompressionTest, ChunksOfSeveralPiecesMatchTheReference) {
  constexpr int64_t kChunk = 8200, kN = 2 * kChunk, kValid = kChunk + 5000;
  auto x = random_tensor({kN}, DType::kF32, device(), 43, -1.0f, 2.0f);
  Tensor error = random_tensor({kN}, DType::kF32, device(), 44, -0.5f, 0.5f).tensor;
  std::vector<float> carried = error.to(Device::cpu()).to_vector<float>();
  for (int64_t i = kValid; i < kN; ++i) carried[i] = 0.0f;
  error = Tensor::from_vector(carried, {kN}).to(device());
  Tensor bits = Tensor::empty({kN / 8}, DType::kU8, device());
  Tensor scales = Tensor::empty({2}, DType::kF32, device());
  const Reference want = compress_reference(x.values, carried, kChunk, kValid);
  compress_signs_(x.tensor, error, bits, scales, kChunk, kValid);
  const std::vector<float> got_scales = scales.to(Device::cpu()).to_vector<float>();
  for (int64_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(got_scales[c], want.scales[c], 1e-5f * want.scales[c]) << "chunk " << c;
  }
  const std::vector<float> got_error = error.to(Device::cpu()).to_vector<float>();
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(got_error[i], want.error[i], 1e-4f) << "element " << i;
  }
}

TEST_P(SignCompressionTest, AverageSignsIsTheMeanOfTheRanksExpandedCopies) {
  constexpr int64_t kChunk = 16;
  constexpr int kRanks = 3;
  const std::vector<uint8_t> signs = {0x00, 0xff, 0x5a, 0xa5, 0x0f, 0xf0};
  const std::vector<float> scales = {0.5f, 2.0f, 0.25f};
  Tensor bits = Tensor::from_vector(signs, {kRanks * kChunk / 8}).to(device());
  Tensor scale_tensor = Tensor::from_vector(scales, {kRanks}).to(device());
  Tensor mean = Tensor::empty({kChunk}, DType::kF32, device());
  average_signs(bits, scale_tensor, mean, kChunk);
  const std::vector<float> got = mean.to(Device::cpu()).to_vector<float>();
  for (int64_t i = 0; i < kChunk; ++i) {
    double sum = 0;
    for (int r = 0; r < kRanks; ++r) {
      const bool bit = (signs[r * kChunk / 8 + i / 8] >> (i % 8)) & 1;
      sum += bit ? scales[r] : -scales[r];
    }
    EXPECT_FLOAT_EQ(got[i], static_cast<float>(sum / kRanks)) << "element " << i;
  }
}

TEST(SignCompressionChecks, RefuseChunksThatAreNotWholeBytes) {
  Tensor x = zeros({24}), error = zeros({24}), bits = Tensor::empty({3}, DType::kU8);
  Tensor scales = Tensor::empty({2});
  EXPECT_THROW(compress_signs_(x, error, bits, scales, 12, 24), Error);
}

COURSE_INSTANTIATE_DEVICE_TESTS(SignCompressionTest);

}  // namespace
}  // namespace course
