// The magnitude tables of RandAugment and TrivialAugmentWide and the per-image draws.
#include "common/data/augment_policy.h"

#include <cmath>
#include <opencv2/core.hpp>

#include "common/core/error.h"
#include "common/core/named_choices.h"

namespace course {

namespace {

float linspace(float low, float high, int bin, int bins) {
  return low + (high - low) * static_cast<float>(bin) / static_cast<float>(bins - 1);
}

}  // namespace

const char* augment_policy_name(AugmentPolicyKind kind) {
  switch (kind) {
    case AugmentPolicyKind::kNone:
      return "none";
    case AugmentPolicyKind::kRandAugment:
      return "randaugment";
    case AugmentPolicyKind::kTrivialAugmentWide:
      return "trivialaugment";
  }
  COURSE_FAIL("augmentation policy ", static_cast<int>(kind), " has no name");
}

std::vector<std::pair<std::string, AugmentPolicyKind>> augment_policy_choices() {
  return named_choices({AugmentPolicyKind::kNone, AugmentPolicyKind::kRandAugment,
                        AugmentPolicyKind::kTrivialAugmentWide},
                       augment_policy_name);
}

void validate(const AugmentPolicy& p) {
  COURSE_CHECK(p.bins >= 2, "an augmentation policy needs at least 2 magnitude bins, got ", p.bins);
  COURSE_CHECK(p.ops >= 0, "RandAugment's number of operations must not be negative, got ", p.ops);
  COURSE_CHECK(p.magnitude >= 0 && p.magnitude < p.bins, "RandAugment's magnitude must be in [0, ",
               p.bins - 1, "], got ", p.magnitude);
}

bool is_signed(AugmentOp op) {
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY:
    case AugmentOp::kRotate:
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return true;
    default:
      return false;
  }
}

float augment_magnitude(AugmentPolicyKind kind, AugmentOp op, int bin, int bins, int height,
                        int width) {
  const bool wide = kind == AugmentPolicyKind::kTrivialAugmentWide;
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return linspace(0, wide ? 0.99f : 0.3f, bin, bins);
    case AugmentOp::kTranslateX:
      return linspace(0, wide ? 32.0f : 150.0f / 331.0f * width, bin, bins);
    case AugmentOp::kTranslateY:
      return linspace(0, wide ? 32.0f : 150.0f / 331.0f * height, bin, bins);
    case AugmentOp::kRotate:
      return linspace(0, wide ? 135.0f : 30.0f, bin, bins);
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return linspace(0, wide ? 0.99f : 0.9f, bin, bins);
    case AugmentOp::kPosterize:
      return 8.0f - std::round(static_cast<float>(bin) / ((bins - 1) / (wide ? 6.0f : 4.0f)));
    case AugmentOp::kSolarize:
      return 255.0f * linspace(1.0f, 0.0f, bin, bins);
    default:
      return 0.0f;
  }
}

std::vector<AugmentStep> draw_augment_steps(const AugmentPolicy& p, int height, int width,
                                            std::mt19937& rng) {
  if (p.kind == AugmentPolicyKind::kNone) return {};
  const bool trivial = p.kind == AugmentPolicyKind::kTrivialAugmentWide;
  std::uniform_int_distribution<size_t> pick_op(0, kAugmentOps.size() - 1);
  std::uniform_int_distribution<int> pick_bin(0, p.bins - 1);
  std::bernoulli_distribution negate(0.5);
  std::vector<AugmentStep> steps;
  for (int k = 0; k < (trivial ? 1 : p.ops); ++k) {
    const AugmentOp op = kAugmentOps[pick_op(rng)];
    const int bin = trivial ? pick_bin(rng) : p.magnitude;
    float m = augment_magnitude(p.kind, op, bin, p.bins, height, width);
    if (is_signed(op) && negate(rng)) m = -m;
    const bool enhancement = op == AugmentOp::kBrightness || op == AugmentOp::kColor ||
                             op == AugmentOp::kContrast || op == AugmentOp::kSharpness;
    steps.push_back({op, enhancement ? 1.0f + m : m});
  }
  return steps;
}

cv::Mat augment(const cv::Mat& image, const AugmentPolicy& policy, std::mt19937& rng) {
  cv::Mat out = image;
  for (const AugmentStep& step : draw_augment_steps(policy, image.rows, image.cols, rng)) {
    out = apply_augment_op(out, step.op, step.magnitude);
  }
  return out;
}

}  // namespace course
