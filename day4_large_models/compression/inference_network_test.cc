// compress quantize's pieces on smallnet with random weights and batch-norm statistics (so that
// folding has something to fold): the folded, fused f32 network against the trained network's
// own forward pass; the int8 networks (both calibrations, TP4.20's solution) against the f32
// one; networks that are not a plain sequence refused; the calibration ranges by hand.
#include "day4_large_models/compression/inference_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/models/models.h"
#include "common/nn/batch_norm.h"
#include "day4_large_models/compression/activation_range.h"

namespace day4 {
namespace {

using namespace course;

Tensor random_values(const Shape& shape, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(v, shape);
}

// smallnet in evaluation mode whose batch norms have non-trivial learnt and running values.
std::unique_ptr<nn::Module> trained_smallnet(std::mt19937& rng) {
  auto net = nn::make_model({.name = "smallnet", .in_channels = 1, .num_classes = 10, .seed = 3},
                            Device::cpu());
  for (const nn::Module::Child& c : net->children()) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(c.module)) {
      const Shape channels{bn->running_mean.numel()};
      bn->weight.value = random_values(channels, 0.5f, 2.0f, rng);
      bn->bias.value = random_values(channels, -0.5f, 0.5f, rng);
      bn->running_mean = random_values(channels, -0.3f, 0.3f, rng);
      bn->running_var = random_values(channels, 0.01f, 0.2f, rng);
    }
  }
  net->set_training(false);
  return net;
}

float largest_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  float d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(x[i] - y[i]));
  return d;
}

float largest_magnitude(const Tensor& a) {
  float m = 0;
  for (const float v : a.to_vector<float>()) m = std::max(m, std::fabs(v));
  return m;
}

TEST(InferenceNetwork, FoldedAndFusedIsTheTrainedNetwork) {
  std::mt19937 rng(1);
  auto trained = trained_smallnet(rng);
  InferenceNetwork fused(*trained, Device::cpu());
  ASSERT_EQ(fused.fused_layers(), 4u);
  EXPECT_EQ(fused.describe(0), "conv 1 -> 32, 3x3, batch norm folded, ReLU");
  EXPECT_EQ(fused.describe(3), "linear 128 -> 10");
  const Tensor x = random_values({5, 1, 28, 28}, -1, 2, rng);
  const Tensor want = trained->forward(x), got = fused.forward(x);
  ASSERT_EQ(got.shape(), (Shape{5, 10}));
  EXPECT_LT(largest_difference(got, want), 1e-4f * (1 + largest_magnitude(want)));
  EXPECT_THROW(fused.backward(got), Error) << "inference only";
}

TEST(InferenceNetwork, Int8FollowsF32WithEitherCalibration) {
  std::mt19937 rng(2);
  auto trained = trained_smallnet(rng);
  InferenceNetwork fused(*trained, Device::cpu());
  std::vector<ActivationRange> ranges(fused.fused_layers());
  fused.set_input_observer([&](size_t layer, const Tensor& x) { ranges[layer].observe(x); });
  for (int b = 0; b < 3; ++b) fused.forward(random_values({8, 1, 28, 28}, -1, 2, rng));
  fused.set_input_observer({});
  EXPECT_LE(ranges[0].largest(), 2.0f);
  EXPECT_GT(ranges[0].largest(), 1.99f) << "the first layer sees the images in [-1, 2)";

  const Tensor x = random_values({16, 1, 28, 28}, -1, 2, rng);
  const Tensor reference = fused.forward(x);
  for (const Calibration method : {Calibration::kMinMax, Calibration::kPercentile}) {
    std::vector<float> scales;
    for (const ActivationRange& r : ranges) scales.push_back(r.scale(method, 99.9));
    InferenceNetwork int8 = fused.quantized(scales);
    const Tensor got = int8.forward(x);
    // 8-bit weights and inputs: each logit within a few percent of the logits' range.
    EXPECT_LT(largest_difference(got, reference), 0.05f * largest_magnitude(reference))
        << calibration_name(method, 99.9);
    EXPECT_GT(largest_difference(got, reference), 0.0f) << "int8 is not bit-identical to f32";
  }
  EXPECT_THROW(fused.quantized({1.0f}), Error) << "one scale for four layers";
}

TEST(InferenceNetwork, RefusesNetworksThatAreNotAPlainSequence) {
  auto resnet = nn::make_model({.name = "resnet18-cifar", .in_channels = 3, .num_classes = 10},
                               Device::cpu());
  try {
    InferenceNetwork net(*resnet, Device::cpu());
    FAIL() << "a ResNet was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plain sequence"), std::string::npos) << e.what();
  }
}

TEST(ActivationRange, LargestPercentileAndScaleByHand) {
  // |x| = 1 .. 100 (signs alternate): the 50th percentile is 50, the 99th 99, the 100th 100.
  std::vector<float> v;
  for (int i = 1; i <= 100; ++i)
    v.push_back(i % 2 ? -static_cast<float>(i) : static_cast<float>(i));
  ActivationRange r;
  r.observe(Tensor::from_vector(v, Shape{100}));
  EXPECT_EQ(r.largest(), 100.0f);
  EXPECT_EQ(r.percentile(50), 50.0f);
  EXPECT_EQ(r.percentile(99), 99.0f);
  EXPECT_EQ(r.percentile(100), 100.0f);
  EXPECT_FLOAT_EQ(r.scale(Calibration::kMinMax, 99), 100.0f / 127);
  EXPECT_FLOAT_EQ(r.scale(Calibration::kPercentile, 99), 99.0f / 127);
  ActivationRange zeros;
  zeros.observe(Tensor::from_vector(std::vector<float>(4, 0.0f), Shape{4}));
  EXPECT_EQ(zeros.scale(Calibration::kMinMax, 99), 1.0f) << "all-zero inputs must not give scale 0";
  EXPECT_THROW(ActivationRange().percentile(50), Error) << "nothing observed";
  EXPECT_THROW(r.percentile(0), Error);
}

}  // namespace
}  // namespace day4
