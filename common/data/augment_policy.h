// RandAugment and TrivialAugmentWide, torchvision's automatic augmentation policies, as the
// loader's workers apply them to each training image (after crop, resize and flip):
//   - RandAugment(N, M): N operations, each drawn uniformly from the fourteen (augment_ops.h),
//     all at magnitude bin M of 31;
//   - TrivialAugmentWide: one operation per image at a uniformly drawn bin, with wider ranges.
// A signed operation (shear, translate, rotate, the four enhancements) is negated with
// probability 1/2. Magnitude of bin m (of `bins`, linspace(lo, hi)[m] = lo + (hi - lo) m /
// (bins - 1)):
//                          RandAugment                TrivialAugmentWide
//   ShearX/Y               linspace(0, 0.3)           linspace(0, 0.99)
//   TranslateX/Y           linspace(0, 150/331 side)  linspace(0, 32) pixels
//   Rotate (degrees)       linspace(0, 30)            linspace(0, 135)
//   Brightness, Color,     1 + linspace(0, 0.9)       1 + linspace(0, 0.99)
//   Contrast, Sharpness
//   Posterize (bits)       8 - round(m / ((bins-1)/4))  8 - round(m / ((bins-1)/6))
//   Solarize (threshold)   255 linspace(1, 0)         255 linspace(1, 0)
#pragma once

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/data/augment_ops.h"
#include "common/data/cv_mat_fwd.h"

namespace course {

enum class AugmentPolicyKind { kNone, kRandAugment, kTrivialAugmentWide };

// "none", "randaugment" or "trivialaugment"; throws naming the three.
// "none", "randaugment", "trivialaugment"; and every kind with its name, for the flags.
const char* augment_policy_name(AugmentPolicyKind kind);
std::vector<std::pair<std::string, AugmentPolicyKind>> augment_policy_choices();

struct AugmentPolicy {
  AugmentPolicyKind kind = AugmentPolicyKind::kNone;
  int ops = 2;        // RandAugment's N
  int magnitude = 9;  // RandAugment's bin M, in [0, bins)
  int bins = 31;
};

// Throws on N < 0, M outside [0, bins) or fewer than 2 bins.
void validate(const AugmentPolicy& policy);

struct AugmentStep {
  AugmentOp op = AugmentOp::kIdentity;
  float magnitude = 0;  // what apply_augment_op takes (a factor for the enhancements)
};

// The unsigned magnitude of `op` at `bin` under `kind`'s table, for a height x width image.
float augment_magnitude(AugmentPolicyKind kind, AugmentOp op, int bin, int bins, int height,
                        int width);
bool is_signed(AugmentOp op);

// The operations the policy applies to one image, drawn from `rng`.
std::vector<AugmentStep> draw_augment_steps(const AugmentPolicy& policy, int height, int width,
                                            std::mt19937& rng);

// `image` after the policy's operations (the image itself for kNone).
cv::Mat augment(const cv::Mat& image, const AugmentPolicy& policy, std::mt19937& rng);

}  // namespace course
