// DeepSpeed's 1-bit compression with error feedback, segment by segment, against a naive host
// reference on every device: segments of uneven lengths cut into 3 ranks' chunks (one of
// several summing pieces), signed values with exact zeros and a negative zero, an error carried
// over two calls, the signs in rank-major order, the server's sum of the ranks' copies, and the
// expansion back with its padding zeroed.
#include "common/kernels/sign_compression.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using testing::random_tensor;

constexpr int kRanks = 3;
// 2 chunks of 8, 3 x 8200 (several pieces of 4096 each), 3 x 16.
const std::vector<int64_t> kLengths = {48, 3 * 8200, 48};

int64_t total(const std::vector<int64_t>& lengths) {
  int64_t n = 0;
  for (const int64_t length : lengths) n += length;
  return n;
}

// Where element i of segment t (at `offset`, `length` long) goes in the rank-major order.
int64_t rank_major(int64_t offset, int64_t length, int64_t i, int64_t n) {
  const int64_t chunk = length / kRanks, within = i - offset;
  return (within / chunk) * (n / kRanks) + offset / kRanks + within % chunk;
}

struct Compressed {
  std::vector<float> scales, error;
  std::vector<uint8_t> bits;
};

// The reference: scale = sqrt(sum of v^2) / sqrt(length) in double, bit set unless v < 0.
Compressed compress_reference(const std::vector<float>& x, std::vector<float> error) {
  const int64_t n = total(kLengths);
  Compressed c{.bits = std::vector<uint8_t>(n / 8, 0)};
  int64_t offset = 0;
  for (const int64_t length : kLengths) {
    double squares = 0;
    for (int64_t i = offset; i < offset + length; ++i) {
      squares += static_cast<double>(x[i] + error[i]) * (x[i] + error[i]);
    }
    const auto scale = static_cast<float>(std::sqrt(squares / static_cast<double>(length)));
    c.scales.push_back(scale);
    for (int64_t i = offset; i < offset + length; ++i) {
      const float v = x[i] + error[i];
      const int64_t bit = rank_major(offset, length, i, n);
      if (!(v < 0.0f)) c.bits[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      error[i] = v - (v < 0.0f ? -scale : scale);
    }
    offset += length;
  }
  c.error = std::move(error);
  return c;
}

using SignCompressionTest = testing::DeviceTest;

TEST_P(SignCompressionTest, SegmentsCompressToTheirRootMeanSquareAndCarryTheirError) {
  const int64_t n = total(kLengths);
  const SegmentPlan plan = segment_plan(kLengths, kRanks, device());
  auto x = random_tensor({n}, DType::kF32, device(), 41, -2.0f, 1.0f);
  std::vector<float> values = x.values;
  values[3] = 0.0f;  // a zero is sent as +scale
  values[50] = -0.0f;
  Tensor input = Tensor::from_vector(values, {n}).to(device());
  Tensor error = zeros({n}, DType::kF32, device());
  Tensor bits = Tensor::empty({n / 8}, DType::kU8, device());
  Tensor scales = Tensor::empty({3}, DType::kF32, device());
  std::vector<float> carried(n, 0.0f);
  for (int call = 0; call < 2; ++call) {  // the second call starts from the first's error
    const Compressed want = compress_reference(values, carried);
    compress_segments_(input, error, bits, scales, plan);
    const std::vector<float> got_scales = scales.to(Device::cpu()).to_vector<float>();
    for (int t = 0; t < 3; ++t) {
      EXPECT_NEAR(got_scales[t], want.scales[t], 1e-5f * want.scales[t]) << "segment " << t;
    }
    EXPECT_EQ(bits.to(Device::cpu()).to_vector<uint8_t>(), want.bits) << "call " << call;
    const std::vector<float> got_error = error.to(Device::cpu()).to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got_error[i], want.error[i], 1e-5f) << "element " << i << ", call " << call;
    }
    carried = want.error;
  }
}

// A server's three copies of its chunks (segments of 16 and 8): the sum of sign x scale / 3.
TEST_P(SignCompressionTest, TheServerSumsTheRanksCopiesOverTheRanks) {
  const SegmentPlan plan = segment_plan({16, 8}, 1, device());
  const std::vector<uint8_t> signs = {0x00, 0xff, 0x5a, 0xa5, 0x0f, 0xf0, 0x33, 0x81, 0x7e};
  const std::vector<float> scales = {0.5f, 3.0f, 2.0f, 0.75f, 0.25f, 1.5f};  // [r][t]
  Tensor bits = Tensor::from_vector(signs, {9}).to(device());
  Tensor scale_tensor = Tensor::from_vector(scales, {6}).to(device());
  Tensor sum = Tensor::empty({24}, DType::kF32, device());
  average_compressed(bits, scale_tensor, sum, plan, kRanks);
  const std::vector<float> got = sum.to(Device::cpu()).to_vector<float>();
  for (int64_t k = 0; k < 24; ++k) {
    float want = 0;
    for (int r = 0; r < kRanks; ++r) {
      const bool bit = (signs[r * 3 + k / 8] >> (k % 8)) & 1;
      const float scale = scales[r * 2 + (k < 16 ? 0 : 1)] * (1.0f / kRanks);
      want += bit ? scale : -scale;
    }
    EXPECT_FLOAT_EQ(got[k], want) << "element " << k;
  }
}

// Gathered signs (rank-major) and every rank's scales back in the buffer's layout, chunk r of
// segment t at scale [r][t]; the segments' last 5 and 30 elements padding, zeroed.
TEST_P(SignCompressionTest, ExpansionPutsEachChunkBackWithItsRanksScale) {
  const std::vector<int64_t> lengths = {24, 48};
  const SegmentPlan plan = segment_plan(lengths, kRanks, device(), {19, 18});
  auto raw = random_tensor({9}, DType::kF32, device(), 7, 0.0f, 255.0f);
  std::vector<uint8_t> signs;
  for (const float v : raw.values) signs.push_back(static_cast<uint8_t>(v));
  const std::vector<float> scales = {1, 2, 3, 4, 5, 6};  // [r][t]
  Tensor out = Tensor::empty({72}, DType::kF32, device());
  expand_segments(Tensor::from_vector(signs, {9}).to(device()),
                  Tensor::from_vector(scales, {6}).to(device()), out, plan);
  const std::vector<float> got = out.to(Device::cpu()).to_vector<float>();
  for (int64_t i = 0; i < 72; ++i) {
    const int t = i < 24 ? 0 : 1;
    const int64_t offset = t == 0 ? 0 : 24, length = lengths[t];
    if (i - offset >= (t == 0 ? 19 : 18)) {
      EXPECT_EQ(got[i], 0.0f) << "padding " << i;
      continue;
    }
    const int64_t bit = rank_major(offset, length, i, 72);
    const float scale = scales[((i - offset) / (length / kRanks)) * 2 + t];
    EXPECT_EQ(got[i], (signs[bit / 8] >> (bit % 8)) & 1 ? scale : -scale) << "element " << i;
  }
}

TEST(SignCompressionChecks, RefuseSegmentsThatDoNotCutIntoWholeByteChunks) {
  EXPECT_THROW(segment_plan({24, 12}, 1, Device::cpu()), Error);
  EXPECT_THROW(segment_plan({36}, kRanks, Device::cpu()), Error);  // 3 chunks of 12: not bytes
  EXPECT_THROW(segment_plan({48}, kRanks, Device::cpu(), {49}), Error);
  const SegmentPlan plan = segment_plan({48}, kRanks, Device::cpu());
  Tensor x = zeros({48}), error = zeros({40}), bits = Tensor::empty({6}, DType::kU8);
  Tensor scales = Tensor::empty({1});
  EXPECT_THROW(compress_segments_(x, error, bits, scales, plan), Error);
}

COURSE_INSTANTIATE_DEVICE_TESTS(SignCompressionTest);

}  // namespace
}  // namespace course
