// The image layers (Conv2d, BatchNorm, ReLU, pooling, residual blocks): backward passes against
// central finite differences, on small shapes, in both memory formats; forward passes against
// direct references where a library computes them; and the layers' bad input. The fully connected
// and sequence layers are in dense_layers_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/layout.h"
#include "common/kernels/pooling_ops.h"
#include "common/models/convnets/residual.h"
#include "common/nn/activation.h"
#include "common/nn/autocast.h"
#include "common/nn/batch_norm.h"
#include "common/nn/conv2d.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
#include "common/testing/devices.h"
#include "common/testing/gradcheck.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

using testing::check_gradients;
using testing::random_tensor;

using testing::kCpu;

class LayerTest : public ::testing::TestWithParam<MemoryFormat> {
 protected:
  Tensor input(const Shape& shape, uint32_t seed) {
    return to_memory_format(random_tensor(shape, DType::kF32, kCpu, seed).tensor, GetParam());
  }
  std::mt19937 rng{3};
};

TEST_P(LayerTest, Conv2dForwardMatchesDirectConvolution) {
  Conv2d conv(3, 4, 3, {2, 1}, rng, kCpu);
  const Tensor x = input({2, 3, 7, 6}, 1);
  const Tensor y = to_memory_format(conv.forward(x), MemoryFormat::kContiguous);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 4, 3}));
  const auto xs = testing::to_floats(to_memory_format(x, MemoryFormat::kContiguous));
  const auto ws = testing::to_floats(conv.weight.value);
  const auto ys = testing::to_floats(y);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 4; ++o)
      for (int oh = 0; oh < 4; ++oh)
        for (int ow = 0; ow < 3; ++ow) {
          double acc = 0;
          for (int c = 0; c < 3; ++c)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                const int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                if (ih < 0 || ih >= 7 || iw < 0 || iw >= 6) continue;
                acc += xs[((n * 3 + c) * 7 + ih) * 6 + iw] * ws[((o * 3 + c) * 3 + kh) * 3 + kw];
              }
          EXPECT_NEAR(ys[((n * 4 + o) * 4 + oh) * 3 + ow], acc, 1e-5);
        }
}

TEST_P(LayerTest, Conv2dGradients) {
  Conv2d conv(3, 4, 3, {2, 1}, rng, kCpu);
  EXPECT_TRUE(check_gradients(conv, input({2, 3, 7, 6}, 2)));
  Conv2d pointwise(4, 2, 1, {1, 0}, rng, kCpu);
  EXPECT_TRUE(check_gradients(pointwise, input({1, 4, 3, 3}, 3)));
  Conv2d strided_pointwise(3, 4, 1, {2, 0}, rng, kCpu);  // a ResNet's projection shortcut
  EXPECT_TRUE(check_gradients(strided_pointwise, input({2, 3, 6, 6}, 4)));
}

TEST_P(LayerTest, BatchNormForwardNormalisesEachChannel) {
  BatchNorm2d bn(3, kCpu);
  const Tensor x = input({4, 3, 5, 2}, 4);
  const auto ys = testing::to_floats(to_memory_format(bn.forward(x), MemoryFormat::kContiguous));
  for (int c = 0; c < 3; ++c) {
    double sum = 0, squares = 0;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 10; ++k) {
        const double v = ys[(n * 3 + c) * 10 + k];
        sum += v;
        squares += v * v;
      }
    EXPECT_NEAR(sum / 40, 0.0, 1e-5);
    EXPECT_NEAR(squares / 40, 1.0, 1e-3);  // variance 1 up to eps
  }
  // Running statistics moved 10% of the way from (0, 1) towards the batch's.
  const auto means = testing::to_floats(bn.running_mean);
  EXPECT_NE(means[0], 0.0f);
}

// PyTorch's rule: running = (1 - momentum) running + momentum batch statistic, with the
// unbiased variance; evaluation normalises with the running statistics and leaves them alone.
TEST_P(LayerTest, BatchNormRunningStatisticsAndEvaluationMode) {
  BatchNorm2d bn(2, kCpu);
  bn.weight.value = Tensor::from_vector<float>({2.0f, 0.5f}, {2});
  bn.bias.value = Tensor::from_vector<float>({1.0f, -1.0f}, {2});
  const Tensor x = input({3, 2, 2, 2}, 9);
  const auto xs = testing::to_floats(to_memory_format(x, MemoryFormat::kContiguous));
  std::vector<double> mean(2), unbiased(2);
  for (int c = 0; c < 2; ++c) {
    double sum = 0, squares = 0;
    for (int n = 0; n < 3; ++n)
      for (int k = 0; k < 4; ++k) sum += xs[(n * 2 + c) * 4 + k];
    mean[c] = sum / 12;
    for (int n = 0; n < 3; ++n)
      for (int k = 0; k < 4; ++k) squares += std::pow(xs[(n * 2 + c) * 4 + k] - mean[c], 2);
    unbiased[c] = squares / 11;
  }
  bn.forward(x);
  bn.forward(x);  // twice: running = 0.81 initial + 0.19 batch
  const auto rm = testing::to_floats(bn.running_mean), rv = testing::to_floats(bn.running_var);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(rm[c], 0.19 * mean[c], 1e-5) << "channel " << c;
    EXPECT_NEAR(rv[c], 0.81 + 0.19 * unbiased[c], 1e-5) << "channel " << c;
  }
  bn.set_training(false);
  const auto ys = testing::to_floats(to_memory_format(bn.forward(x), MemoryFormat::kContiguous));
  const float w[] = {2.0f, 0.5f}, b[] = {1.0f, -1.0f};
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) {
        const int i = (n * 2 + c) * 4 + k;
        EXPECT_NEAR(ys[i], (xs[i] - rm[c]) / std::sqrt(rv[c] + 1e-5) * w[c] + b[c], 1e-4) << i;
      }
  EXPECT_EQ(testing::to_floats(bn.running_mean), rm) << "evaluation must not update statistics";
  EXPECT_EQ(testing::to_floats(bn.running_var), rv);
}

TEST_P(LayerTest, BatchNormGradientsInTrainingMode) {
  BatchNorm2d bn(3, kCpu);
  bn.weight.value = random_tensor({3}, DType::kF32, kCpu, 5, 0.5f, 1.5f).tensor;
  bn.bias.value = random_tensor({3}, DType::kF32, kCpu, 6).tensor;
  EXPECT_TRUE(check_gradients(bn, input({4, 3, 3, 2}, 7)));
}

TEST_P(LayerTest, ReluAndPoolingGradients) {
  ReLU relu;
  EXPECT_TRUE(check_gradients(relu, input({2, 3, 4, 5}, 8), {.step = 1e-3}));
  MaxPool2d pool(3, 2, 1);
  EXPECT_TRUE(check_gradients(pool, input({2, 2, 7, 6}, 9), {.step = 1e-3}));
  MaxPool2d pool2(2, 2);
  EXPECT_TRUE(check_gradients(pool2, input({1, 3, 4, 6}, 10), {.step = 1e-3}));
  GlobalAvgPool2d gap;
  EXPECT_TRUE(check_gradients(gap, input({2, 3, 4, 5}, 11)));
}

TEST(MaxPooling, ChannelsLastAndInt8FindTheSameMaximaPositionsAndGradients) {
  // The channels-last kernel walks pixels with the channels innermost, the NCHW one rows of one
  // channel (2x2 windows of stride 2: a loop of its own over each output row): the same windows
  // in the same order. Integer values make ties, so the first maximum of each window must win
  // in both, and in i8 (int8 inference's activations). 7 x 9 planes: 2x2 windows leave the last
  // row and column out.
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> level(-2, 1);
  std::vector<float> values(2 * 5 * 7 * 9);
  for (float& v : values) v = static_cast<float>(level(rng));
  const Tensor x = Tensor::from_vector(values, Shape{2, 5, 7, 9});
  for (const auto& [kernel, stride, padding] : {std::tuple{3, 2, 1}, std::tuple{2, 2, 0}}) {
    const MaxPoolResult nchw = max_pool_forward(x, kernel, stride, padding);
    const MaxPoolResult nhwc =
        max_pool_forward(to_memory_format(x, MemoryFormat::kChannelsLast), kernel, stride, padding);
    EXPECT_EQ(to_memory_format(nhwc.y, MemoryFormat::kContiguous).to_vector<float>(),
              nchw.y.to_vector<float>());
    EXPECT_EQ(to_memory_format(nhwc.argmax, MemoryFormat::kContiguous).to_vector<int32_t>(),
              nchw.argmax.to_vector<int32_t>());
    // The same integers as i8 (quantized activations): the same maxima and positions.
    const std::vector<int8_t> levels(values.begin(), values.end());
    const MaxPoolResult quantized = max_pool_forward(
        to_memory_format(Tensor::from_vector(levels, x.shape()), MemoryFormat::kChannelsLast),
        kernel, stride, padding);
    const std::vector<int8_t> maxima =
        to_memory_format(quantized.y, MemoryFormat::kContiguous).to_vector<int8_t>();
    EXPECT_EQ(std::vector<float>(maxima.begin(), maxima.end()), nchw.y.to_vector<float>());
    EXPECT_EQ(to_memory_format(quantized.argmax, MemoryFormat::kContiguous).to_vector<int32_t>(),
              nchw.argmax.to_vector<int32_t>());
    // Backward: each window's gradient goes to its recorded maximum only (ties included),
    // summed where windows overlap, as a plain scatter over the outputs computes it.
    const Tensor dy = random_tensor(nchw.y.shape(), DType::kF32, kCpu, 5).tensor;
    const std::vector<float> dys = dy.to_vector<float>();
    const std::vector<int32_t> where = nchw.argmax.to_vector<int32_t>();
    const int64_t outputs_per_plane = nchw.y.size(2) * nchw.y.size(3), plane = 7 * 9;
    std::vector<float> expected(values.size(), 0.0f);
    for (size_t o = 0; o < dys.size(); ++o) {
      expected[o / outputs_per_plane * plane + where[o]] += dys[o];
    }
    EXPECT_EQ(max_pool_backward(dy, nchw, x, kernel, stride, padding).to_vector<float>(), expected);
    const Tensor dx_nhwc = max_pool_backward(to_memory_format(dy, MemoryFormat::kChannelsLast),
                                             nhwc, to_memory_format(x, MemoryFormat::kChannelsLast),
                                             kernel, stride, padding);
    EXPECT_EQ(to_memory_format(dx_nhwc, MemoryFormat::kContiguous).to_vector<float>(), expected);
  }
}

TEST(MaxPooling, OneRowPerIndexAsOnTheGpuEqualsWholePlanesAsOnTheCpu) {
  // The NCHW kernels take a whole plane per index on the CPU and one row on the GPU: the GPU's
  // split, run here, must give the same maxima, positions and gradients.
  const Tensor x = random_tensor({2, 3, 7, 6}, DType::kF32, kCpu, 6).tensor;
  const MaxPoolResult planes = max_pool_forward(x, 3, 2, 1);
  const Tensor dy = random_tensor(planes.y.shape(), DType::kF32, kCpu, 7).tensor;
  const Tensor dx_planes = max_pool_backward(dy, planes, x, 3, 2, 1);
  const ops::PoolGeometry g{2,
                            3,
                            7,
                            6,
                            planes.y.size(2),
                            planes.y.size(3),
                            3,
                            2,
                            1,
                            dims4(x, "x").strides,
                            dims4(planes.y, "y").strides};
  const Tensor y = Tensor::empty(planes.y.shape(), DType::kF32, kCpu);
  const Tensor argmax = Tensor::empty(planes.y.shape(), DType::kI32, kCpu);
  for_each_index(kCpu, g.n * g.c * g.oh,
                 ops::MaxPoolForward<float>{x.data_as<float>(), y.data_as<float>(),
                                            argmax.data_as<int32_t>(), g, 1});
  EXPECT_EQ(y.to_vector<float>(), planes.y.to_vector<float>());
  EXPECT_EQ(argmax.to_vector<int32_t>(), planes.argmax.to_vector<int32_t>());
  const Tensor dx = Tensor::empty(x.shape(), DType::kF32, kCpu);
  for_each_index(kCpu, g.n * g.c * g.h,
                 ops::MaxPoolBackward<float>{dy.data_as<float>(), argmax.data_as<int32_t>(),
                                             dx.data_as<float>(), g, 1});
  EXPECT_EQ(dx.to_vector<float>(), dx_planes.to_vector<float>());
}

TEST_P(LayerTest, ResidualBlockGradients) {
  BasicBlock block(3, 4, 2, rng, kCpu);  // projection shortcut
  EXPECT_TRUE(check_gradients(block, input({2, 3, 6, 6}, 12), {.step = 1e-3}));
  BasicBlock identity(3, 3, 1, rng, kCpu);
  EXPECT_TRUE(check_gradients(identity, input({2, 3, 4, 4}, 13), {.step = 1e-3}));
  Bottleneck bottleneck(4, 2, 2, rng, kCpu);
  EXPECT_TRUE(check_gradients(bottleneck, input({2, 4, 6, 6}, 14), {.step = 1e-3}));
}

INSTANTIATE_TEST_SUITE_P(Formats, LayerTest,
                         ::testing::Values(MemoryFormat::kContiguous, MemoryFormat::kChannelsLast),
                         [](const auto& info) {
                           return info.param == MemoryFormat::kContiguous ? "nchw" : "nhwc";
                         });

// Under autocast on an accelerator, a channels-last convolution's f32 weights reach the library
// as one launch per pass that casts to bf16 and relays to KRSC together (not a cast and a
// relayout). The launches are recorded, not run: only their kinds and sizes are looked at.
// On an accelerator a bf16 channels-last layer makes its compute weights in one launch (a cast
// that relays), in forward; backward reuses them, unless the parameter is released between the
// passes (ZeRO-3), when backward makes them again. Either way backward's results are the same.
TEST(Conv2d, OnAnAcceleratorForwardCastsAndRelaysTheWeightsInOneLaunchThatBackwardReuses) {
  const Device sim = Device::sim();
  const auto nhwc = [&](const Shape& shape, uint32_t seed) {
    return to_memory_format(random_tensor(shape, DType::kBF16, sim, seed).tensor,
                            MemoryFormat::kChannelsLast);
  };
  const Tensor x = nhwc({2, 8, 6, 6}, 7), dy = nhwc({2, 16, 6, 6}, 8);
  Autocast autocast(DType::kBF16);
  std::vector<std::vector<float>> results;
  for (bool released : {false, true}) {
    std::mt19937 rng(5);
    Conv2d conv(8, 16, 3, {1, 1}, rng, sim);
    conv.weight.released_between_passes = released;
    const auto relayouts = [&](const LaunchLog& log) {
      std::vector<std::string> found;
      for (const RecordedLaunch& launch : log.launches()) {
        if (launch.kernel.find("Relayout") == std::string::npos) continue;
        EXPECT_EQ(launch.n * launch.work_per_index, conv.weight.value.numel());
        found.push_back(launch.kernel);
      }
      return found;
    };
    Context ctx;
    for (bool forward : {true, false}) {
      LaunchLog log;
      if (forward) {
        conv.forward(x, ctx);
      } else {
        conv.backward(dy, ctx);
      }
      const std::vector<std::string> found = relayouts(log);
      const std::string pass = std::string(forward ? "forward" : "backward") +
                               (released ? ", released between the passes" : "");
      ASSERT_EQ(found.size(), forward || released ? 1u : 0u) << pass;
      if (!found.empty()) {
        EXPECT_NE(found[0].find("BFloat16"), std::string::npos) << found[0];
      }
    }
    conv.forward(x);
    results.push_back(
        testing::to_floats(to_memory_format(conv.backward(dy), MemoryFormat::kContiguous)));
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST(Layers, BadInputIsAClearError) {
  std::mt19937 rng(5);
  Conv2d conv(3, 4, 3, {1, 0}, rng, kCpu);
  EXPECT_THROW(conv.forward(Tensor::empty({1, 2, 5, 5})), Error);  // wrong channel count
  EXPECT_THROW(conv.forward(Tensor::empty({1, 3, 2, 2})), Error);  // smaller than the kernel
  Linear fc(5, 3, rng, kCpu);
  EXPECT_THROW(fc.forward(Tensor::empty({2, 4})), Error);
  EXPECT_THROW(fc.backward(Tensor::empty({2, 3})), Error);  // backward before forward
}

}  // namespace
}  // namespace course::nn
