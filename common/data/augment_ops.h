// The fourteen image operations of RandAugment and TrivialAugmentWide (torchvision's list), on
// decoded u8 images of 1 or 3 channels (cv::Mat, RGB order), each with its magnitude:
//   geometric (nearest-neighbour, the uncovered area filled with 0):
//     ShearX/Y m       output (x, y) reads input (x + m y, y), resp. (x, y + m x)
//     TranslateX/Y m   moved by trunc(m) pixels (positive: right, down)
//     Rotate m         m degrees counter-clockwise about the image's centre
//   colour (computed in float, rounded to the nearest level and saturated, as OpenCV converts;
//   torchvision truncates instead, which differs by at most one level):
//     Brightness f     f x
//     Color f          f x + (1 - f) grey(x)          (grey: identity on 1 channel)
//     Contrast f       f x + (1 - f) mean(grey(x))
//     Sharpness f      f x + (1 - f) blur(x), blur = [[1 1 1] [1 5 1] [1 1 1]] / 13 inside,
//                      the 1-pixel border kept
//   histogram (magnitude: bits, threshold, or none):
//     Posterize b      the top b bits of every level
//     Solarize t       levels >= t inverted (255 - x)
//     AutoContrast     each channel stretched to [0, 255] (a constant channel kept)
//     Equalize         each channel's histogram equalised as PIL does
#pragma once

#include <array>

#include "common/data/cv_mat_fwd.h"

namespace course {

enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
};

inline constexpr std::array<AugmentOp, 14> kAugmentOps = {
    AugmentOp::kIdentity,     AugmentOp::kShearX,    AugmentOp::kShearY,     AugmentOp::kTranslateX,
    AugmentOp::kTranslateY,   AugmentOp::kRotate,    AugmentOp::kBrightness, AugmentOp::kColor,
    AugmentOp::kContrast,     AugmentOp::kSharpness, AugmentOp::kPosterize,  AugmentOp::kSolarize,
    AugmentOp::kAutoContrast, AugmentOp::kEqualize};

const char* augment_op_name(AugmentOp op);

// `image` (CV_8UC1 or CV_8UC3) after `op` with `magnitude` (ignored by the operations without
// one); a new image, the input untouched.
cv::Mat apply_augment_op(const cv::Mat& image, AugmentOp op, float magnitude);

}  // namespace course
