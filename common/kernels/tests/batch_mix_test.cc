// The batch-mixing kernels and the soft-target loss: MixUp and CutMix of a batch with its flipped
// self against values worked out by hand (NCHW and channels-last alike), the mixed soft targets,
// and soft-target cross-entropy against the hard-label loss on one-hot targets and against
// central finite differences of a double-precision reference.
#include "common/kernels/batch_mix.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/soft_cross_entropy.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

using BatchMixTest = testing::DeviceTest;

// 4 samples of 1 x 2 x 3 pixels: sample i's pixel (y, x) is 10 i + 3 y + x.
Tensor four_samples(Device device) {
  std::vector<float> v;
  for (int i = 0; i < 4; ++i) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) v.push_back(static_cast<float>(10 * i + 3 * y + x));
    }
  }
  return Tensor::from_vector(v, {4, 1, 2, 3}).to(device);
}

TEST_P(BatchMixTest, MixUpAndCutMixWithTheFlippedBatchByHand) {
  const Tensor x = four_samples(device());
  // Sample 0: MixUp 0.25 with sample 3; sample 1: CutMix of row 1, columns 1-2 from sample 2;
  // sample 2: untouched; sample 3: the whole image from sample 0.
  const Tensor weights = Tensor::from_vector<float>({0.25f, 1.0f, 1.0f, 1.0f}, {4}).to(device());
  const Tensor boxes =
      Tensor::from_vector<int32_t>({0, 0, 0, 0, 1, 2, 1, 3, 0, 0, 0, 0, 0, 2, 0, 3}, {4, 4})
          .to(device());
  const std::vector<float> expected = {// 0.25 (3 y + x) + 0.75 (30 + 3 y + x) = 22.5 + 3 y + x
                                       22.5f, 23.5f, 24.5f, 25.5f, 26.5f, 27.5f,
                                       // sample 1, (1, 1) and (1, 2) from sample 2
                                       10, 11, 12, 13, 24, 25,
                                       // sample 2 as it was
                                       20, 21, 22, 23, 24, 25,
                                       // sample 3 = sample 0
                                       0, 1, 2, 3, 4, 5};
  EXPECT_EQ(mix_with_flipped(x, weights, boxes).to(Device::cpu()).to_vector<float>(), expected);
  // Channels-last: the same image in the other memory format.
  const Tensor mixed_nhwc =
      mix_with_flipped(to_memory_format(x, MemoryFormat::kChannelsLast), weights, boxes);
  EXPECT_EQ(mixed_nhwc.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(
      to_memory_format(mixed_nhwc, MemoryFormat::kContiguous).to(Device::cpu()).to_vector<float>(),
      expected);
}

TEST_P(BatchMixTest, MixedSoftTargetsWeighTheTwoSmoothedLabels) {
  const Tensor labels = Tensor::from_vector<int64_t>({0, 2}, {2}).to(device());
  const Tensor lambdas = Tensor::from_vector<float>({0.75f, 0.75f}, {2}).to(device());
  // 3 classes, smoothing 0.3: on = 0.8, off = 0.1. Row 0: 0.75 (0.8, 0.1, 0.1) + 0.25 (0.1, 0.1,
  // 0.8); row 1 the reverse.
  const std::vector<float> got =
      mixed_soft_targets(labels, lambdas, 3, 0.3f).to(Device::cpu()).to_vector<float>();
  const std::vector<float> expected = {0.625f, 0.1f, 0.275f, 0.275f, 0.1f, 0.625f};
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6f) << i;
  // Label 2 of 2 classes: reported at once in host memory; on an accelerator (no host wait per
  // step) both rows that hold it as own or partner label are NaN, which the loss then shows.
  if (device().is_cpu()) {
    EXPECT_THROW(mixed_soft_targets(labels, lambdas, 2, 0.0f), Error) << "label 2 of 2 classes";
  } else {
    for (float v :
         mixed_soft_targets(labels, lambdas, 2, 0.0f).to(Device::cpu()).to_vector<float>())
      EXPECT_TRUE(std::isnan(v));
  }
}

TEST_P(BatchMixTest, SoftTargetLossOfOneHotTargetsIsTheHardLoss) {
  const Tensor logits =
      testing::random_tensor({5, 7}, DType::kF32, device(), 3, -4.0f, 4.0f).tensor;
  const std::vector<int64_t> y = {0, 6, 3, 3, 1};
  const Tensor labels = Tensor::from_vector<int64_t>(y, {5}).to(device());
  const Tensor ones = Tensor::from_vector<float>(std::vector<float>(5, 1.0f), {5}).to(device());
  const Tensor targets = mixed_soft_targets(labels, ones, 7, 0.1f);
  const CrossEntropyOutput soft = soft_target_cross_entropy(logits, targets);
  const CrossEntropyOutput hard = softmax_cross_entropy(logits, labels, 0.1f);
  EXPECT_NEAR(soft.host_loss(), hard.host_loss(), 1e-6f);
  const std::vector<float> soft_grad =
      soft_target_cross_entropy_backward(soft, targets, DType::kF32)
          .to(Device::cpu())
          .to_vector<float>();
  const std::vector<float> hard_grad =
      softmax_cross_entropy_backward(hard, labels, 0.1f, DType::kF32)
          .to(Device::cpu())
          .to_vector<float>();
  for (size_t i = 0; i < soft_grad.size(); ++i) EXPECT_NEAR(soft_grad[i], hard_grad[i], 1e-7f) << i;
}

// Mean soft-target cross-entropy in double precision.
double reference_loss(const std::vector<double>& x, const std::vector<float>& q, int64_t classes) {
  const int64_t rows = static_cast<int64_t>(x.size()) / classes;
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double top = x[r * classes];
    for (int64_t c = 1; c < classes; ++c) top = std::max(top, x[r * classes + c]);
    double s = 0;
    for (int64_t c = 0; c < classes; ++c) s += std::exp(x[r * classes + c] - top);
    for (int64_t c = 0; c < classes; ++c) {
      total += q[r * classes + c] * (top + std::log(s) - x[r * classes + c]);
    }
  }
  return total / static_cast<double>(rows);
}

TEST_P(BatchMixTest, SoftTargetGradientMatchesFiniteDifferences) {
  const int64_t rows = 4, classes = 5;
  const Tensor logits =
      testing::random_tensor({rows, classes}, DType::kF32, device(), 9, -3.0f, 3.0f).tensor;
  const Tensor labels = Tensor::from_vector<int64_t>({1, 4, 0, 2}, {rows}).to(device());
  const Tensor lambdas = Tensor::from_vector<float>({0.6f, 0.3f, 0.3f, 0.6f}, {rows}).to(device());
  const Tensor targets = mixed_soft_targets(labels, lambdas, classes, 0.1f);
  const CrossEntropyOutput out = soft_target_cross_entropy(logits, targets);
  const std::vector<float> grad =
      soft_target_cross_entropy_backward(out, targets, DType::kF32, 2.0f)
          .to(Device::cpu())
          .to_vector<float>();
  const std::vector<float> x32 = logits.to(Device::cpu()).to_vector<float>();
  const std::vector<float> q = targets.to(Device::cpu()).to_vector<float>();
  std::vector<double> x(x32.begin(), x32.end());
  EXPECT_NEAR(out.host_loss(), reference_loss(x, q, classes), 1e-5);
  const double h = 1e-4;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double numeric =
        2.0 * (reference_loss(up, q, classes) - reference_loss(down, q, classes)) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-5) << "logit " << i;
  }
}

TEST_P(BatchMixTest, ShapesThatDoNotMatchAreClearErrors) {
  const Tensor x = four_samples(device());
  const Tensor weights = Tensor::from_vector<float>({1, 1, 1, 1}, {4}).to(device());
  EXPECT_THROW(mix_with_flipped(x, weights, zeros({4, 3}, DType::kI32, device())), Error);
  EXPECT_THROW(mix_with_flipped(x.view({4, 6}), weights, zeros({4, 4}, DType::kI32, device())),
               Error);
  EXPECT_THROW(soft_target_cross_entropy(zeros({2, 3}, DType::kF32, device()),
                                         zeros({2, 4}, DType::kF32, device())),
               Error);
}

COURSE_INSTANTIATE_DEVICE_TESTS(BatchMixTest);

}  // namespace
}  // namespace course
