// MixUp / CutMix plans and their application: the share of every sample's pixels taken from its
// partner equals 1 - lambda and its target's weights follow lambda (the two known defects of the
// course's own CutMix, a box ignoring lambda and a dropped border, fail here); boxes follow
// lambda and reach every border; the modes share lambda across the batch, within pairs, or not
// at all; Beta draws have the Beta's mean and variance; bad options are clear errors.
#include <gtest/gtest.h>

#include <cmath>

#include "common/data/batch_mix.h"

namespace course {
namespace {

constexpr int64_t kClasses = 10;

// n samples of 3 x h x w whose every pixel of sample i is i + 1: where a pixel came from is its
// value.
Tensor constant_samples(int64_t n, int64_t h, int64_t w) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.insert(v.end(), 3 * h * w, static_cast<float>(i + 1));
  return Tensor::from_vector(v, {n, 3, h, w});
}

TEST(BatchMix, CutMixAreaIsOneMinusLambdaAndTheTargetsFollowIt) {
  const int64_t n = 8, h = 13, w = 17;  // odd sides: the box is clipped and rounded
  const MixOptions cutmix_only{
      .mixup_alpha = 0, .cutmix_alpha = 1.0f, .mode = MixMode::kElement, .label_smoothing = 0};
  std::vector<int64_t> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = i % kClasses;
  const Tensor labels = Tensor::from_vector<int64_t>(y, {n});
  std::mt19937 rng(5);
  for (int round = 0; round < 20; ++round) {
    const MixPlan plan = plan_batch_mix(n, h, w, cutmix_only, rng);
    const MixedBatch mixed = mix_batch(constant_samples(n, h, w), labels, plan, kClasses, 0);
    const std::vector<float> pixels = mixed.images.to_vector<float>();
    const std::vector<float> targets = mixed.targets.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float partner = static_cast<float>(n - i);
      int64_t taken = 0;
      for (int64_t e = 0; e < 3 * h * w; ++e) taken += pixels[i * 3 * h * w + e] == partner;
      const float lambda = plan.lambdas[i];
      EXPECT_FLOAT_EQ(static_cast<float>(taken) / static_cast<float>(3 * h * w), 1.0f - lambda)
          << "sample " << i << ", round " << round;
      EXPECT_FLOAT_EQ(targets[i * kClasses + y[i]],
                      lambda + (y[i] == y[n - 1 - i] ? 1 - lambda : 0))
          << "own label's weight, sample " << i;
      if (y[i] != y[n - 1 - i]) {
        EXPECT_FLOAT_EQ(targets[i * kClasses + y[n - 1 - i]], 1.0f - lambda) << "sample " << i;
      }
    }
  }
}

TEST(BatchMix, BoxesFollowLambdaAndReachEveryBorder) {
  std::mt19937 rng(11);
  const int64_t h = 32, w = 32;
  bool top = false, bottom = false, left = false, right = false;
  for (int i = 0; i < 400; ++i) {
    const float lambda = 0.3f;
    const CutMixCut cut = cutmix_cut(lambda, h, w, rng);
    const std::array<int32_t, 4>& b = cut.box;
    EXPECT_FLOAT_EQ(cut.lambda, 1.0f - static_cast<float>((b[1] - b[0]) * (b[3] - b[2])) / (h * w));
    const int64_t side = static_cast<int64_t>(32 * std::sqrt(0.7f));  // 26
    EXPECT_LE(b[1] - b[0], side);
    EXPECT_LE(b[3] - b[2], side);
    // A box away from the borders is the full size.
    if (b[0] > 0 && b[1] < h) {
      EXPECT_EQ(b[1] - b[0], side) << "rows [" << b[0] << ", " << b[1] << ")";
    }
    top |= b[0] == 0;
    bottom |= b[1] == h;
    left |= b[2] == 0;
    right |= b[3] == w;
  }
  EXPECT_TRUE(top && bottom && left && right) << "boxes must reach every border of the image";
  const CutMixCut empty = cutmix_cut(1.0f, h, w, rng);
  EXPECT_EQ((empty.box[1] - empty.box[0]) * (empty.box[3] - empty.box[2]), 0)
      << "lambda 1: an empty box";
  EXPECT_EQ(empty.lambda, 1.0f);
}

TEST(BatchMix, ModesShareLambdaOverTheBatchWithinPairsOrNotAtAll) {
  std::mt19937 rng(2);
  const MixOptions base{.mixup_alpha = 0.8f, .cutmix_alpha = 1.0f};
  MixOptions batch = base, pair = base, elem = base;
  batch.mode = MixMode::kBatch;
  pair.mode = MixMode::kPair;
  elem.mode = MixMode::kElement;
  const MixPlan b = plan_batch_mix(6, 8, 8, batch, rng);
  for (int i = 1; i < 6; ++i) EXPECT_EQ(b.lambdas[i], b.lambdas[0]);
  const MixPlan p = plan_batch_mix(6, 8, 8, pair, rng);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.lambdas[i], p.lambdas[5 - i]);
    EXPECT_EQ(p.boxes[4 * i], p.boxes[4 * (5 - i)]);
  }
  EXPECT_NE(p.lambdas[0], p.lambdas[1]);
  const MixPlan e = plan_batch_mix(6, 8, 8, elem, rng);
  EXPECT_NE(e.lambdas[0], e.lambdas[5]);
  // prob 0: nothing mixes.
  MixOptions never = base;
  never.prob = 0;
  const MixPlan none = plan_batch_mix(4, 8, 8, never, rng);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(none.lambdas[i], 1.0f);
    EXPECT_EQ(none.weights[i], 1.0f);
  }
}

TEST(BatchMix, MixUpBlendsWithTheWeightOfItsLabel) {
  std::mt19937 rng(4);
  const MixOptions mixup_only{.mixup_alpha = 2.0f, .cutmix_alpha = 0, .mode = MixMode::kElement};
  const MixPlan plan = plan_batch_mix(4, 2, 2, mixup_only, rng);
  const MixedBatch mixed =
      mix_batch(constant_samples(4, 2, 2), Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4}), plan,
                kClasses, 0.0f);
  const std::vector<float> pixels = mixed.images.to_vector<float>();
  for (int64_t i = 0; i < 4; ++i) {
    const float lambda = plan.lambdas[i];
    EXPECT_EQ(plan.weights[i], lambda);
    EXPECT_NEAR(pixels[i * 12], lambda * (i + 1) + (1 - lambda) * (4 - i), 1e-5f) << i;
  }
}

TEST(BatchMix, BetaDrawsHaveTheBetasMeanAndVariance) {
  std::mt19937 rng(8);
  for (float alpha : {0.8f, 2.0f}) {
    double sum = 0, squares = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const double v = sample_beta(alpha, rng);
      ASSERT_TRUE(v >= 0 && v <= 1);
      sum += v;
      squares += v * v;
    }
    const double mean = sum / n, variance = squares / n - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.01) << "alpha " << alpha;
    EXPECT_NEAR(variance, 1.0 / (4 * (2 * alpha + 1)), 0.005) << "alpha " << alpha;
  }
}

TEST(BatchMix, BadOptionsAreClearErrors) {
  std::mt19937 rng(1);
  EXPECT_THROW(plan_batch_mix(5, 8, 8, {}, rng), Error) << "odd batch";
  EXPECT_THROW(plan_batch_mix(4, 8, 8, {.mixup_alpha = 0, .cutmix_alpha = 0}, rng), Error);
  EXPECT_THROW(plan_batch_mix(4, 8, 8, {.prob = 1.5f}, rng), Error);
}

TEST(BatchMix, ModeNamesEachOnce) {
  std::vector<std::string> names;
  for (const auto& [name, mode] : mix_mode_choices()) {
    EXPECT_EQ(mix_mode_name(mode), name);
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"batch", "pair", "elem"}));
}

}  // namespace
}  // namespace course
