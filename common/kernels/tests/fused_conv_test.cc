// Int8 inference kernels: symmetric quantization by hand; FusedConv in f32 against the training
// convolution plus a host epilogue, and in int8 against that convolution of the same integer
// values in f32 (exact: every product and partial sum is an integer below 2^24), then scaled by
// hand, for signed and non-negative inputs with corners where byte products saturate 16 bits; a
// hand-computed 1x1 case; im2col_nhwc times the weights on the host against the same reference (the
// GPU's int8 algorithm, checked on the CPU); bad arguments refused.
#include "common/kernels/fused_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/kernels/layout.h"
#include "common/kernels/quantize.h"
#include "common/testing/devices.h"

namespace course {
namespace {

using FusedConvTest = testing::DeviceTest;

Tensor host(const Tensor& t) {
  return to_memory_format(t.to(Device::cpu()), MemoryFormat::kContiguous);
}

// Random integers in [lowest, 127] as f32 and as i8 (N, C, H, W) / (O, C, K, K), contiguous.
struct Integers {
  Tensor as_float, as_int8;
};
Integers random_integers(const Shape& shape, uint32_t seed, int lowest = -127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> level(lowest, 127);
  std::vector<float> f;
  std::vector<int8_t> q;
  for (int64_t i = 0; i < numel_of(shape); ++i) {
    q.push_back(static_cast<int8_t>(level(rng)));
    f.push_back(q.back());
  }
  return {Tensor::from_vector(f, shape), Tensor::from_vector(q, shape)};
}

// y[n, o, h, w] = acc[n, o, h, w] * scale[o] + bias[o], ReLU'd; acc a contiguous conv output.
std::vector<float> epilogue(const Tensor& acc, const std::vector<float>& scale,
                            const std::vector<float>& bias, bool relu) {
  std::vector<float> y = host(acc).to_vector<float>();
  const int64_t channels = acc.size(1), plane = acc.size(2) * acc.size(3);
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t o = (i / static_cast<size_t>(plane)) % static_cast<size_t>(channels);
    y[i] = y[i] * scale[o] + bias[o];
    if (relu && y[i] < 0) y[i] = 0;
  }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << "element " << i;
  }
}

TEST_P(FusedConvTest, QuantizesToNearestEvenAndClamps) {
  const Tensor x =
      Tensor::from_vector(std::vector<float>{0.25f, 0.75f, -1.25f, 100, -100, 0.3f}, Shape{6});
  const Tensor q = quantize_symmetric(x.to(device()), 0.5f).to(Device::cpu());
  EXPECT_EQ(q.to_vector<int8_t>(), (std::vector<int8_t>{0, 2, -2, 127, -127, 1}));
  EXPECT_THROW(quantize_symmetric(x, 0.0f), Error);
}

TEST_P(FusedConvTest, Float32MatchesTheConvolutionWithBiasAndRelu) {
  for (const bool relu : {false, true}) {
    const Integers x = random_integers({2, 3, 7, 6}, 1), w = random_integers({5, 3, 3, 3}, 2);
    const std::vector<float> bias = {-300, 0, 250, 1000, -1000};
    const std::vector<float> ones(5, 1.0f);
    FusedConv conv({.weight = w.as_float,
                    .bias = Tensor::from_vector(bias, Shape{5}),
                    .shape = {.stride = 2, .padding = 1},
                    .relu = relu},
                   0.0f, device());
    EXPECT_FALSE(conv.is_int8());
    const Tensor y =
        conv.forward(to_memory_format(x.as_float.to(device()), MemoryFormat::kChannelsLast));
    EXPECT_EQ(y.memory_format(), MemoryFormat::kChannelsLast);
    expect_close(host(y).to_vector<float>(),
                 epilogue(conv2d_forward(x.as_float, w.as_float, {2, 1}), ones, bias, relu), 1e-5f);
  }
}

// An int8 layer's input: signed (a network's first layer) or not (after a ReLU), each with a
// corner of +-127 inputs under +-127 weights, where two products already pass 2^15.
Integers int8_input(const Shape& shape, uint32_t seed, bool has_negatives) {
  const Integers x = random_integers(shape, seed, has_negatives ? -127 : 0);
  for (int64_t c = 0; c < shape[1]; ++c) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t at = (c * shape[2] + i) * shape[3] + j;
        const int8_t v = has_negatives && c % 2 ? -127 : 127;
        x.as_int8.data_as<int8_t>()[at] = v;
        x.as_float.data_as<float>()[at] = v;
      }
    }
  }
  return x;
}

Integers extreme_weights(const Shape& shape, uint32_t seed) {
  const Integers w = random_integers(shape, seed);
  for (int64_t k = 0; k < shape[1] * shape[2] * shape[3]; ++k) {  // output channel 0
    w.as_int8.data_as<int8_t>()[k] = k % 3 ? 127 : -127;
    w.as_float.data_as<float>()[k] = k % 3 ? 127 : -127;
  }
  return w;
}

// Int8 convolutions by device and by the sign of their input.
class FusedConvInt8Test : public testing::DeviceCaseTest<bool> {
 protected:
  bool has_negatives() const { return value<0>(); }
};

TEST_P(FusedConvInt8Test, IsTheIntegerConvolutionRescaledPerChannel) {
  const Integers x = int8_input({2, 4, 9, 8}, 3, has_negatives());
  const Integers w = extreme_weights({6, 4, 3, 3}, 4);
  const std::vector<float> weight_scales = {0.01f, 0.5f, 0.002f, 1.0f, 0.03f, 0.2f};
  const std::vector<float> bias = {1, -2, 0.5f, 0, 3, -40};
  const float input_scale = 0.05f;
  FusedConv conv({.weight = w.as_int8,
                  .scales = Tensor::from_vector(weight_scales, Shape{6}),
                  .bias = Tensor::from_vector(bias, Shape{6}),
                  .shape = {.stride = 1, .padding = 1},
                  .relu = true},
                 input_scale, device());
  EXPECT_TRUE(conv.is_int8());
  const Tensor y =
      conv.forward(to_memory_format(x.as_int8, MemoryFormat::kChannelsLast).to(device()));
  std::vector<float> scale;
  for (const float s : weight_scales) scale.push_back(input_scale * s);
  expect_close(host(y).to_vector<float>(),
               epilogue(conv2d_forward(x.as_float, w.as_float, {1, 1}), scale, bias, true), 1e-5f);
}

TEST_P(FusedConvInt8Test, OutputIsTheResultQuantizedAtTheOutputScale) {
  // What the next int8 layer reads: the f32 result of the test above quantized at 0.5 (oneDNN
  // rounds the rescaled sum, the reference the f32 result; a tie may round apart, by one level).
  const Integers x = int8_input({2, 4, 9, 8}, 7, has_negatives());
  const Integers w = extreme_weights({6, 4, 3, 3}, 8);
  const std::vector<float> weight_scales = {0.01f, 0.005f, 0.002f, 0.003f, 0.004f, 0.02f};
  const std::vector<float> bias = {1, -2, 0.5f, 0, 3, -4};
  const float input_scale = 0.05f, output_scale = 0.5f;
  FusedConv conv({.weight = w.as_int8,
                  .scales = Tensor::from_vector(weight_scales, Shape{6}),
                  .bias = Tensor::from_vector(bias, Shape{6}),
                  .shape = {.stride = 1, .padding = 1},
                  .relu = true},
                 input_scale, device(), output_scale);
  const Tensor y =
      conv.forward(to_memory_format(x.as_int8, MemoryFormat::kChannelsLast).to(device()));
  ASSERT_EQ(y.dtype(), DType::kI8);
  std::vector<float> scale;
  for (const float s : weight_scales) scale.push_back(input_scale * s);
  const std::vector<float> want =
      epilogue(conv2d_forward(x.as_float, w.as_float, {1, 1}), scale, bias, true);
  const std::vector<int8_t> got = host(y).to_vector<int8_t>();
  int exact = 0, nonzero = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float level = std::min(std::nearbyint(want[i] / output_scale), 127.0f);
    ASSERT_LE(std::fabs(got[i] - level), 1.0f) << "element " << i;
    exact += got[i] == level;
    nonzero += got[i] != 0;
  }
  EXPECT_GE(exact, static_cast<int>(got.size()) * 99 / 100);
  EXPECT_GT(nonzero, static_cast<int>(got.size()) / 4)
      << "the scales should leave most outputs nonzero";
  EXPECT_THROW(FusedConv({.weight = w.as_float, .bias = Tensor::from_vector(bias, Shape{6})}, 0.0f,
                         device(), 0.5f),
               Error)
      << "an i8 output of f32 weights";
}

TEST_P(FusedConvTest, AOneByOneCaseByHand) {
  // Input 1 everywhere (2x2, 1 channel), weights 2 and -3 with scales 0.5 and 0.25, input scale
  // 0.1, bias (1, 0): channel 0 is 2 * 0.1 * 0.5 + 1 = 1.1, channel 1 is -3 * 0.1 * 0.25 = -0.075,
  // 0 after the ReLU.
  FusedConv conv({.weight = Tensor::from_vector(std::vector<int8_t>{2, -3}, Shape{2, 1, 1, 1}),
                  .scales = Tensor::from_vector(std::vector<float>{0.5f, 0.25f}, Shape{2}),
                  .bias = Tensor::from_vector(std::vector<float>{1, 0}, Shape{2}),
                  .relu = true},
                 0.1f, device());
  const Tensor ones = Tensor::from_vector(std::vector<int8_t>(4, 1), Shape{1, 1, 2, 2})
                          .view({1, 1, 2, 2}, MemoryFormat::kChannelsLast);
  const std::vector<float> y = host(conv.forward(ones.to(device()))).to_vector<float>();
  expect_close(y, {1.1f, 1.1f, 1.1f, 1.1f, 0, 0, 0, 0}, 1e-6f);
}

TEST_P(FusedConvTest, Im2colTimesTheWeightsIsTheConvolution) {
  // The GPU's int8 path on any device: rows of receptive fields (column (kh K + kw) C + c, padded
  // to 40) times the weights in that order, against the f32 convolution of the same integers.
  const Integers x = random_integers({2, 3, 5, 4}, 5), w = random_integers({4, 3, 3, 3}, 6);
  const Conv2dShape shape{.stride = 2, .padding = 1};
  const Tensor cols =
      im2col_nhwc(to_memory_format(x.as_int8, MemoryFormat::kChannelsLast).to(device()), 3, shape,
                  40)
          .to(Device::cpu());
  ASSERT_EQ(cols.shape(), (Shape{2 * 3 * 2, 40}));
  const std::vector<int8_t> rows = cols.to_vector<int8_t>(),
                            weights = w.as_int8.to_vector<int8_t>();
  Tensor product = Tensor::empty({cols.size(0), 4});
  for (int64_t r = 0; r < cols.size(0); ++r) {
    for (int64_t o = 0; o < 4; ++o) {
      int32_t sum = 0;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t kk = 0; kk < 9; ++kk) {
          sum += rows[static_cast<size_t>(r * 40 + kk * 3 + c)] *
                 weights[static_cast<size_t>((o * 3 + c) * 9 + kk)];
        }
      }
      for (int64_t col = 27; col < 40; ++col) EXPECT_EQ(rows[static_cast<size_t>(r * 40 + col)], 0);
      product.data_as<float>()[r * 4 + o] = static_cast<float>(sum);
    }
  }
  expect_close(host(product.view({2, 4, 3, 2}, MemoryFormat::kChannelsLast)).to_vector<float>(),
               host(conv2d_forward(x.as_float, w.as_float, shape)).to_vector<float>(), 0.0f);
}

TEST_P(FusedConvTest, RefusesWhatItCannotRun) {
  const Tensor bias = Tensor::from_vector(std::vector<float>{0, 0}, Shape{2});
  const Tensor int8_weight = Tensor::from_vector(std::vector<int8_t>{1, 2}, Shape{2, 1, 1, 1});
  EXPECT_THROW(FusedConv({.weight = int8_weight, .bias = bias}, 0.1f, device()), Error)
      << "i8 weights without their scales";
  FusedConv conv(
      {.weight = Tensor::from_vector(std::vector<float>{1, 2}, Shape{2, 1, 1, 1}), .bias = bias},
      0.0f, device());
  EXPECT_THROW(conv.forward(Tensor::empty({1, 1, 2, 2}, DType::kF32, device())), Error)
      << "an NCHW input";
  EXPECT_THROW(
      conv.forward(Tensor::empty({1, 1, 2, 2}, DType::kI8, device(), MemoryFormat::kChannelsLast)),
      Error)
      << "an i8 input to f32 weights";
}

COURSE_INSTANTIATE_DEVICE_TESTS(FusedConvTest);
INSTANTIATE_TEST_SUITE_P(Cases, FusedConvInt8Test,
                         ::testing::Combine(::testing::ValuesIn(testing::test_devices()),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return testing::case_part(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_signed_input"
                                                           : "_nonnegative_input");
                         });

}  // namespace
}  // namespace course
