// The fully connected and sequence layers (Linear, with its GELU epilogue or without, GELU,
// LayerNorm, Dropout): forward passes against their formulas, backward passes against central
// finite differences; and the gradient check itself against wrong backward passes.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "common/kernels/elementwise.h"
#include "common/kernels/launch_plan.h"
#include "common/kernels/layout.h"
#include "common/nn/activation.h"
#include "common/nn/autocast.h"
#include "common/nn/dropout.h"
#include "common/nn/init.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/sequential.h"
#include "common/testing/devices.h"
#include "common/testing/gradcheck.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

using testing::check_gradients;
using testing::kCpu;
using testing::random_tensor;

TEST(Linear, ForwardAndGradients) {
  std::mt19937 rng(4);
  Linear fc(5, 3, rng, kCpu);
  const auto x = random_tensor({4, 5}, DType::kF32, kCpu, 15);
  const auto y = testing::to_floats(fc.forward(x.tensor));
  const auto w = testing::to_floats(fc.weight.value), b = testing::to_floats(fc.bias->value);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 3; ++o) {
      double acc = b[o];
      for (int i = 0; i < 5; ++i) acc += x.values[n * 5 + i] * w[o * 5 + i];
      EXPECT_NEAR(y[n * 3 + o], acc, 1e-5);
    }
  EXPECT_TRUE(check_gradients(fc, x.tensor));
}

// GELU in the layer's epilogue: its gradients against finite differences, and its output and
// gradients equal, bit for bit, a plain linear layer and a GELU layer after it (on the CPU, where
// the epilogue is one pass of the same arithmetic), in f32 and under bf16 autocast.
TEST(Linear, WithGeluInItsEpilogueEqualsALinearThenAGelu) {
  std::mt19937 rng(6);
  const Tensor weight = normal({16, 5}, 0.5f, rng, kCpu);
  const Tensor bias = normal({16}, 0.5f, rng, kCpu);
  const auto x = random_tensor({2, 3, 5}, DType::kF32, kCpu, 16, -2.0f, 2.0f);
  const auto dy = random_tensor({2, 3, 16}, DType::kF32, kCpu, 17);
  for (bool autocast : {false, true}) {
    Linear fused(weight.clone(), bias.clone(), LinearEpilogue::kBiasGelu);
    Sequential apart;
    Linear& plain = apart.add_named(std::make_unique<Linear>(weight.clone(), bias.clone()), "fc");
    apart.add(std::make_unique<GELU>(), "gelu");
    const Autocast scope(DType::kBF16, autocast);
    const Tensor y_fused = fused.forward(x.tensor), y_apart = apart.forward(x.tensor);
    ASSERT_EQ(y_fused.shape(), y_apart.shape());
    EXPECT_EQ(testing::to_floats(y_fused), testing::to_floats(y_apart));
    // The gradient arrives in the output's dtype (as the next layer's backward returns it).
    const Tensor grad = cast(dy.tensor, y_fused.dtype());
    EXPECT_EQ(testing::to_floats(fused.backward(grad)), testing::to_floats(apart.backward(grad)));
    EXPECT_EQ(testing::to_floats(fused.weight.grad), testing::to_floats(plain.weight.grad));
    EXPECT_EQ(testing::to_floats(fused.bias->grad), testing::to_floats(plain.bias->grad));
  }
  Linear fused(weight.clone(), bias.clone(), LinearEpilogue::kBiasGelu);
  EXPECT_TRUE(check_gradients(fused, x.tensor));
}

// Under autocast forward casts the weight once and backward multiplies by that cast, making none
// of its own, unless the parameter is released between the passes (ZeRO-3); in evaluation
// nothing is kept. Backward's results are the same either way.
TEST(Linear, BackwardReusesForwardsCastOfTheWeight) {
  std::mt19937 rng(7);
  const Tensor weight = normal({12, 5}, 0.5f, rng, kCpu);
  const Tensor bias = normal({12}, 0.5f, rng, kCpu);
  const auto x = random_tensor({3, 5}, DType::kF32, kCpu, 18, -2.0f, 2.0f);
  const Tensor dy = cast(random_tensor({3, 12}, DType::kF32, kCpu, 19).tensor, DType::kBF16);
  const Autocast autocast(DType::kBF16);
  const auto weight_casts = [&](const LaunchLog& log) {
    int count = 0;
    for (const RecordedLaunch& launch : log.launches()) {
      const bool cast = launch.kernel.find("Cast") != std::string::npos;
      count += cast && launch.n * launch.work_per_index == weight.numel();
    }
    return count;
  };
  std::vector<std::vector<float>> results;
  for (const auto& [released, training] : {std::pair{false, true}, {true, true}, {false, false}}) {
    Linear fc(weight.clone(), bias.clone());
    fc.weight.released_between_passes = released;
    fc.set_training(training);
    const std::string regime =
        std::string(released ? "released" : "kept") + (training ? ", training" : ", evaluating");
    Context ctx;
    {
      LaunchLog log;
      fc.forward(x.tensor, ctx);
      EXPECT_EQ(weight_casts(log), 1) << "forward, " << regime;
    }
    {
      LaunchLog log;
      fc.backward(dy, ctx);
      EXPECT_EQ(weight_casts(log), released || !training ? 1 : 0) << "backward, " << regime;
    }
    fc.forward(x.tensor);
    results.push_back(testing::to_floats(fc.backward(dy)));
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// The check itself must fail on a wrong backward: here a linear layer whose input gradient is
// scaled by 1.5, and one whose weight gradient is dropped.
class WrongLinear : public Linear {
 public:
  using Linear::Linear;
  Tensor run_backward(const Tensor& dy, Context& ctx) override {
    Tensor dx = Linear::run_backward(dy, ctx);
    scale_(dx, 1.5f);
    return dx;
  }
};

class ForgetfulLinear : public Linear {
 public:
  using Linear::Linear;
  Tensor run_backward(const Tensor& dy, Context& ctx) override {
    Tensor dx = Linear::run_backward(dy, ctx);
    fill_(weight.grad, 0.0);
    return dx;
  }
};

// A model built only for its shapes: zeros, and the generator left as it was, so the weights
// drawn after the scope are those of a run that never opened it; scopes nest.
TEST(SkippedInit, GivesZerosAndLeavesTheGeneratorAsItWas) {
  std::mt19937 rng(7), twin(7);
  {
    const SkippedInit outer;
    {
      const SkippedInit inner;
      EXPECT_EQ(normal({3}, 1.0f, rng, Device::cpu()).to_vector<float>(),
                std::vector<float>(3, 0.0f));
    }
    EXPECT_EQ(kaiming_normal({2, 2}, 4, rng, Device::cpu()).to_vector<float>(),
              std::vector<float>(4, 0.0f));
    EXPECT_EQ(uniform({5}, 0.5f, rng, Device::cpu()).shape(), Shape({5}));
  }
  EXPECT_EQ(normal({4}, 1.0f, rng, Device::cpu()).to_vector<float>(),
            normal({4}, 1.0f, twin, Device::cpu()).to_vector<float>());
  EXPECT_NE(normal({1}, 1.0f, rng, Device::cpu()).to_vector<float>()[0], 0.0f);
}

TEST(Gelu, ForwardMatchesTheTanhFormulaAndGradientsTheFiniteDifferences) {
  GELU gelu;
  const Tensor x = Tensor::from_vector<float>({-3.0f, -1.0f, -0.1f, 0.0f, 0.5f, 2.0f}, {2, 3});
  const std::vector<float> y = gelu.forward(x).to_vector<float>();
  const std::vector<float> xs = x.to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    const double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y[i], want, 1e-6) << "x = " << v;
  }
  EXPECT_NEAR(y[5], 1.9545977, 1e-6);  // gelu(2), worked out by hand
  EXPECT_TRUE(check_gradients(gelu, random_tensor({3, 7}, DType::kF32, kCpu, 12, -3, 3).tensor));
}

TEST(LayerNorm, ForwardNormalisesEachRowThenScalesAndShifts) {
  LayerNorm ln(5, kCpu);
  ln.weight.value = Tensor::from_vector<float>({1.0f, 2.0f, 0.5f, -1.0f, 3.0f}, {5});
  ln.bias.value = Tensor::from_vector<float>({0.0f, 0.1f, -0.2f, 0.3f, 1.0f}, {5});
  const testing::TestTensor x = random_tensor({2, 3, 5}, DType::kF32, kCpu, 13, -2, 2);
  const std::vector<float> y = ln.forward(x.tensor).to_vector<float>();
  const std::vector<float> w = ln.weight.value.to_vector<float>(),
                           b = ln.bias.value.to_vector<float>();
  for (int row = 0; row < 6; ++row) {
    double mean = 0, var = 0;
    for (int j = 0; j < 5; ++j) mean += x.values[row * 5 + j] / 5.0;
    for (int j = 0; j < 5; ++j) var += std::pow(x.values[row * 5 + j] - mean, 2) / 5.0;
    for (int j = 0; j < 5; ++j) {
      const double want = (x.values[row * 5 + j] - mean) / std::sqrt(var + 1e-5) * w[j] + b[j];
      EXPECT_NEAR(y[row * 5 + j], want, 1e-5) << "row " << row << ", channel " << j;
    }
  }
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  LayerNorm ln(6, kCpu);
  ln.weight.value = random_tensor({6}, DType::kF32, kCpu, 14, 0.5f, 1.5f).tensor;
  ln.bias.value = random_tensor({6}, DType::kF32, kCpu, 15).tensor;
  EXPECT_TRUE(check_gradients(ln, random_tensor({2, 4, 6}, DType::kF32, kCpu, 16, -2, 2).tensor));
}

TEST(GradCheck, RejectsWrongBackwardPasses) {
  std::mt19937 rng(6);
  const Tensor x = random_tensor({3, 4}, DType::kF32, kCpu, 16).tensor;
  WrongLinear wrong(4, 2, rng, kCpu);
  EXPECT_FALSE(check_gradients(wrong, x));
  ForgetfulLinear forgetful(4, 2, rng, kCpu);
  EXPECT_FALSE(check_gradients(forgetful, x));
}

TEST(Dropout, ZeroesAboutPAndScalesTheRestInTrainingOnly) {
  Dropout dropout(0.25f, 7);
  Tensor x = zeros({100, 100});
  fill_(x, 2.0);
  const std::vector<float> y = dropout.forward(x).to_vector<float>();
  int64_t zeros_seen = 0;
  for (float v : y) {
    if (v == 0.0f) {
      ++zeros_seen;
    } else {
      EXPECT_FLOAT_EQ(v, 2.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros_seen / 10000.0, 0.25, 0.02);  // binomial: sd 0.0043
  // The backward pass applies the same mask.
  const std::vector<float> dx = dropout.backward(x).to_vector<float>();
  EXPECT_EQ(dx, y);
  // Each call draws a new mask.
  EXPECT_NE(dropout.forward(x).to_vector<float>(), y);
  dropout.set_training(false);
  EXPECT_EQ(dropout.forward(x).data(), x.data());
  EXPECT_THROW(Dropout(1.0f), Error);
}

// The mask follows the elements, not their storage: a channels-last input's gradient, arriving
// in NCHW, is masked where its output was.
TEST(Dropout, BackwardMasksWhereForwardDidWhateverTheGradientsLayout) {
  Dropout dropout(0.5f, 3);
  Tensor ones = zeros({2, 8, 3, 5});
  fill_(ones, 1.0);
  const Tensor y = dropout.forward(to_memory_format(ones, MemoryFormat::kChannelsLast));
  const Tensor dx = dropout.backward(ones);
  EXPECT_EQ(to_memory_format(dx, MemoryFormat::kContiguous).to_vector<float>(),
            to_memory_format(y, MemoryFormat::kContiguous).to_vector<float>());
}

}  // namespace
}  // namespace course::nn
