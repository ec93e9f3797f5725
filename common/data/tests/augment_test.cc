// The RandAugment operations against hand-computed images and OpenCV's own rotations; the
// policies' magnitude tables at their ends and middle; the per-image draws (uniform operations,
// both signs, one step for TrivialAugmentWide, a fixed bin for RandAugment); reproducible
// augmentation from a seed; bad policies refused.
#include <gtest/gtest.h>

#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <vector>

#include "common/data/augment_policy.h"
#include "common/data/transforms.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using testing::error_of;

cv::Mat grey(int rows, int cols, const std::vector<int>& levels) {
  cv::Mat m(rows, cols, CV_8UC1);
  for (int i = 0; i < rows * cols; ++i) m.at<uint8_t>(i) = static_cast<uint8_t>(levels[i]);
  return m;
}

std::vector<int> levels_of(const cv::Mat& m) {
  std::vector<int> v;
  const cv::Mat flat = m.reshape(1, 1);
  for (int i = 0; i < static_cast<int>(flat.total()); ++i) v.push_back(flat.at<uint8_t>(i));
  return v;
}

std::vector<int> after(const cv::Mat& m, AugmentOp op, float magnitude) {
  return levels_of(apply_augment_op(m, op, magnitude));
}

TEST(AugmentOps, TranslateMovesByWholePixelsAndFillsWithZero) {
  const cv::Mat row = grey(1, 5, {10, 20, 30, 40, 50});
  EXPECT_EQ(after(row, AugmentOp::kTranslateX, 2.0f), (std::vector<int>{0, 0, 10, 20, 30}));
  EXPECT_EQ(after(row, AugmentOp::kTranslateX, -1.7f), (std::vector<int>{20, 30, 40, 50, 0}));
  const cv::Mat column = grey(3, 1, {1, 2, 3});
  EXPECT_EQ(after(column, AugmentOp::kTranslateY, 1.0f), (std::vector<int>{0, 1, 2}));
}

TEST(AugmentOps, ShearReadsAlongTheOtherAxis) {
  const cv::Mat m = grey(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // out(x, y) = in(x + y, y): row y moves y pixels to the left.
  EXPECT_EQ(after(m, AugmentOp::kShearX, 1.0f), (std::vector<int>{1, 2, 3, 5, 6, 0, 9, 0, 0}));
  // out(x, y) = in(x, y + x): column x moves x pixels up.
  EXPECT_EQ(after(m, AugmentOp::kShearY, 1.0f), (std::vector<int>{1, 5, 9, 4, 8, 0, 7, 0, 0}));
}

TEST(AugmentOps, RotateMatchesOpenCvsQuarterTurns) {
  cv::Mat m(4, 4, CV_8UC3);
  cv::randu(m, 0, 256);
  cv::Mat quarter, half;
  cv::rotate(m, quarter, cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::rotate(m, half, cv::ROTATE_180);
  EXPECT_EQ(after(m, AugmentOp::kRotate, 90.0f), levels_of(quarter));
  EXPECT_EQ(after(m, AugmentOp::kRotate, 180.0f), levels_of(half));
  EXPECT_EQ(after(m, AugmentOp::kRotate, 0.0f), levels_of(m));
}

TEST(AugmentOps, EnhancementsBlendWithTheirDegenerateImage) {
  EXPECT_EQ(after(grey(1, 3, {100, 200, 40}), AugmentOp::kBrightness, 1.5f),
            (std::vector<int>{150, 255, 60}));
  EXPECT_EQ(after(grey(1, 2, {100, 40}), AugmentOp::kBrightness, 0.25f),
            (std::vector<int>{25, 10}));
  // Contrast: around the mean grey level (100 here).
  const cv::Mat c = grey(1, 4, {0, 100, 200, 100});
  EXPECT_EQ(after(c, AugmentOp::kContrast, 0.5f), (std::vector<int>{50, 100, 150, 100}));
  EXPECT_EQ(after(c, AugmentOp::kContrast, 2.0f), (std::vector<int>{0, 100, 255, 100}));
  // Color: towards grey (0.299 R + 0.587 G + 0.114 B = 76 for pure red), identity on grey.
  const cv::Mat red(1, 1, CV_8UC3, cv::Scalar(255, 0, 0));
  EXPECT_EQ(after(red, AugmentOp::kColor, 0.0f), (std::vector<int>{76, 76, 76}));
  EXPECT_EQ(after(red, AugmentOp::kColor, 2.0f), (std::vector<int>{255, 0, 0}));
  EXPECT_EQ(after(c, AugmentOp::kColor, 0.0f), levels_of(c));
  // Sharpness: the centre blurs to (5 x 26) / 13 = 10, the border is kept.
  const cv::Mat dot = grey(3, 3, {0, 0, 0, 0, 26, 0, 0, 0, 0});
  EXPECT_EQ(after(dot, AugmentOp::kSharpness, 0.0f),
            (std::vector<int>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
  EXPECT_EQ(after(dot, AugmentOp::kSharpness, 2.0f),
            (std::vector<int>{0, 0, 0, 0, 42, 0, 0, 0, 0}));
  const cv::Mat flat = grey(4, 4, std::vector<int>(16, 77));
  EXPECT_EQ(after(flat, AugmentOp::kSharpness, 0.0f), levels_of(flat));
}

TEST(AugmentOps, HistogramOperations) {
  const cv::Mat m = grey(1, 3, {255, 17, 8});
  EXPECT_EQ(after(m, AugmentOp::kPosterize, 4.0f), (std::vector<int>{240, 16, 0}));
  EXPECT_EQ(after(m, AugmentOp::kPosterize, 8.0f), levels_of(m));
  EXPECT_EQ(after(m, AugmentOp::kPosterize, 0.0f), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(after(grey(1, 3, {127, 128, 200}), AugmentOp::kSolarize, 128.0f),
            (std::vector<int>{127, 127, 55}));
  EXPECT_EQ(after(grey(1, 3, {127, 128, 200}), AugmentOp::kSolarize, 255.0f),
            (std::vector<int>{127, 128, 200}));
  EXPECT_EQ(after(grey(1, 3, {50, 100, 150}), AugmentOp::kAutoContrast, 0),
            (std::vector<int>{0, 128, 255}));
  EXPECT_EQ(after(grey(1, 2, {7, 7}), AugmentOp::kAutoContrast, 0), (std::vector<int>{7, 7}));
  // Each channel on its own: the second is constant and stays.
  cv::Mat two(1, 2, CV_8UC3);
  two.at<cv::Vec3b>(0) = {10, 9, 0};
  two.at<cv::Vec3b>(1) = {20, 9, 255};
  EXPECT_EQ(after(two, AugmentOp::kAutoContrast, 0), (std::vector<int>{0, 9, 0, 255, 9, 255}));
}

TEST(AugmentOps, EqualizeFollowsPil) {
  // 1020 pixels: 510 at level 10, 255 at 20, 255 at 30. PIL: step = (1020 - 255) / 255 = 3;
  // level 10 -> (3/2) / 3 = 0, 20 -> (1 + 510) / 3 = 170, 30 -> (1 + 765) / 3 = 255.
  std::vector<int> v(1020, 30);
  std::fill(v.begin(), v.begin() + 510, 10);
  std::fill(v.begin() + 510, v.begin() + 765, 20);
  const std::vector<int> out = after(grey(51, 20, v), AugmentOp::kEqualize, 0);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[600], 170);
  EXPECT_EQ(out[1000], 255);
  // Too few pixels for a step, or one level only: unchanged.
  EXPECT_EQ(after(grey(1, 3, {0, 1, 2}), AugmentOp::kEqualize, 0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(after(grey(20, 20, std::vector<int>(400, 9)), AugmentOp::kEqualize, 0),
            std::vector<int>(400, 9));
}

TEST(AugmentPolicy, MagnitudeTables) {
  const auto ra = [](AugmentOp op, int bin) {
    return augment_magnitude(AugmentPolicyKind::kRandAugment, op, bin, 31, 331, 662);
  };
  const auto ta = [](AugmentOp op, int bin) {
    return augment_magnitude(AugmentPolicyKind::kTrivialAugmentWide, op, bin, 31, 331, 662);
  };
  EXPECT_FLOAT_EQ(ra(AugmentOp::kShearX, 9), 0.09f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kTranslateX, 30), 300.0f);  // 150/331 of the width
  EXPECT_FLOAT_EQ(ra(AugmentOp::kTranslateY, 30), 150.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kRotate, 15), 15.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kBrightness, 30), 0.9f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kPosterize, 0), 8.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kPosterize, 9), 7.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kPosterize, 30), 4.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kSolarize, 0), 255.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kSolarize, 30), 0.0f);
  EXPECT_FLOAT_EQ(ra(AugmentOp::kEqualize, 30), 0.0f);
  EXPECT_FLOAT_EQ(ta(AugmentOp::kShearY, 30), 0.99f);
  EXPECT_FLOAT_EQ(ta(AugmentOp::kTranslateX, 30), 32.0f);
  EXPECT_FLOAT_EQ(ta(AugmentOp::kRotate, 30), 135.0f);
  EXPECT_FLOAT_EQ(ta(AugmentOp::kPosterize, 30), 2.0f);
}

TEST(AugmentPolicy, RandAugmentDrawsUniformOperationsAtOneBinWithBothSigns) {
  const AugmentPolicy policy{.kind = AugmentPolicyKind::kRandAugment, .ops = 3, .magnitude = 9};
  std::mt19937 rng(1);
  std::map<AugmentOp, int> count;
  std::map<AugmentOp, std::set<float>> magnitudes;
  const int images = 14000;
  for (int i = 0; i < images; ++i) {
    const std::vector<AugmentStep> steps = draw_augment_steps(policy, 32, 32, rng);
    ASSERT_EQ(steps.size(), 3u);
    for (const AugmentStep& s : steps) {
      ++count[s.op];
      magnitudes[s.op].insert(s.magnitude);
    }
  }
  // 3000 expected per operation; 5 standard deviations of a binomial(42000, 1/14) is 264.
  for (AugmentOp op : kAugmentOps) {
    EXPECT_NEAR(count[op], 3000, 264) << augment_op_name(op);
    const float m = augment_magnitude(policy.kind, op, 9, 31, 32, 32);
    const bool factor = op == AugmentOp::kBrightness || op == AugmentOp::kColor ||
                        op == AugmentOp::kContrast || op == AugmentOp::kSharpness;
    std::set<float> expected{factor ? 1 + m : m};
    if (is_signed(op)) expected.insert(factor ? 1 - m : -m);
    EXPECT_EQ(magnitudes[op], expected) << augment_op_name(op);
  }
}

TEST(AugmentPolicy, TrivialAugmentDrawsOneOperationAtAnyBin) {
  const AugmentPolicy policy{.kind = AugmentPolicyKind::kTrivialAugmentWide};
  std::mt19937 rng(2);
  std::set<float> rotations;
  for (int i = 0; i < 20000; ++i) {
    const std::vector<AugmentStep> steps = draw_augment_steps(policy, 32, 32, rng);
    ASSERT_EQ(steps.size(), 1u);
    if (steps[0].op == AugmentOp::kRotate) rotations.insert(steps[0].magnitude);
  }
  EXPECT_EQ(rotations.size(), 61u);  // 31 bins, both signs, 0 once
  EXPECT_EQ(*rotations.rbegin(), 135.0f);
  EXPECT_TRUE(draw_augment_steps({}, 32, 32, rng).empty());
}

TEST(AugmentPolicy, TrainingTransformIsReproducibleAndValidationUntouched) {
  Tensor pixels = Tensor::empty({16, 16, 3}, DType::kU8);
  cv::Mat view(16, 16, CV_8UC3, pixels.data());
  cv::randu(view, 0, 256);
  const TransformOptions plain{
      .size = 16, .random_crop = false, .mean = {0, 0, 0}, .std = {1, 1, 1}};
  TransformOptions augmented = plain;
  augmented.policy = {.kind = AugmentPolicyKind::kRandAugment, .ops = 2, .magnitude = 15};
  const auto run = [&](const TransformOptions& o, uint32_t seed) {
    std::vector<float> out(3 * 16 * 16);
    std::mt19937 rng(seed);
    transform_image(pixels, o, rng, out.data());
    return out;
  };
  EXPECT_EQ(run(augmented, 4), run(augmented, 4));
  int differing = 0;
  for (uint32_t seed = 0; seed < 20; ++seed) differing += run(augmented, seed) != run(plain, seed);
  EXPECT_GE(differing, 15);  // only Identity twice (1/196) leaves an image as it was
  TransformOptions validation = augmented;
  validation.train = false;
  TransformOptions plain_validation = plain;
  plain_validation.train = false;
  EXPECT_EQ(run(validation, 3), run(plain_validation, 3));
}

TEST(AugmentPolicy, StepsComposeInTorchvisionsOrderWithALabsOwnLast) {
  TransformOptions o{.size = 4, .random_crop = false, .mean = {0}, .std = {1}};
  o.policy = {.kind = AugmentPolicyKind::kTrivialAugmentWide};
  // A lab's own step: every level inverted, after crop, flip, jitter and the policy.
  o.extra_steps.push_back([](const cv::Mat& image, std::mt19937&) {
    cv::Mat inverted;
    cv::bitwise_not(image, inverted);
    return inverted;
  });
  EXPECT_EQ(compose(o).size(), 4u);
  TransformOptions validation = o;
  validation.train = false;
  EXPECT_EQ(compose(validation).size(), 1u) << "validation: the centre crop alone";
  Tensor pixels = Tensor::empty({4, 4, 1}, DType::kU8);
  cv::Mat view(4, 4, CV_8UC1, pixels.data());
  cv::randu(view, 0, 256);
  std::vector<float> with(16), without(16);
  std::mt19937 a(9), b(9);
  transform_image(pixels, o, a, with.data());
  o.extra_steps.clear();
  transform_image(pixels, o, b, without.data());
  for (int k = 0; k < 16; ++k) EXPECT_NEAR(with[k], 1.0f - without[k], 1e-6f) << k;
  o.extra_steps.push_back([](const cv::Mat& image, std::mt19937&) { return image.rowRange(0, 2); });
  EXPECT_NE(error_of([&] { transform_image(pixels, o, a, with.data()); }).find("must keep 4 x 4"),
            std::string::npos);
}

TEST(AugmentPolicy, BadPoliciesAreRefused) {
  EXPECT_NE(error_of([] { validate(AugmentPolicy{.magnitude = 31}); }).find("[0, 30]"),
            std::string::npos);
  EXPECT_NE(error_of([] { validate(AugmentPolicy{.ops = -1}); }).find("negative"),
            std::string::npos);
}

TEST(AugmentPolicy, NamesAreTorchvisionsEachOnce) {
  std::vector<std::string> names;
  for (const auto& [name, kind] : augment_policy_choices()) {
    EXPECT_EQ(augment_policy_name(kind), name);
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"none", "randaugment", "trivialaugment"}));
}

}  // namespace
}  // namespace course
