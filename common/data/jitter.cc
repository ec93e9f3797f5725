// Jitter draws, and their application with RandAugment's own operations.
#include "common/data/jitter.h"

#include <opencv2/core.hpp>

#include "common/core/error.h"
#include "common/data/augment_ops.h"

namespace course {

void validate(const JitterOptions& o) {
  COURSE_CHECK(o.max_translate >= 0, "--translate must not be negative, got ", o.max_translate);
  COURSE_CHECK(o.brightness >= 0 && o.brightness <= 1 && o.contrast >= 0 && o.contrast <= 1,
               "--brightness and --contrast must be in [0, 1], got ", o.brightness, " and ",
               o.contrast);
}

JitterDraw draw_jitter(const JitterOptions& o, bool flip, std::mt19937& rng) {
  JitterDraw d;
  if (flip) d.flip = std::bernoulli_distribution(0.5)(rng);
  if (o.max_translate > 0) {
    std::uniform_int_distribution<int> shift(-o.max_translate, o.max_translate);
    d.dx = shift(rng);
    d.dy = shift(rng);
  }
  if (o.brightness > 0) {
    d.brightness = std::uniform_real_distribution<float>(1 - o.brightness, 1 + o.brightness)(rng);
  }
  if (o.contrast > 0) {
    d.contrast = std::uniform_real_distribution<float>(1 - o.contrast, 1 + o.contrast)(rng);
  }
  return d;
}

cv::Mat apply_jitter(const cv::Mat& image, const JitterDraw& d) {
  cv::Mat out = image;
  if (d.flip) {
    cv::Mat flipped;
    cv::flip(out, flipped, 1);
    out = flipped;
  }
  if (d.dx != 0) out = apply_augment_op(out, AugmentOp::kTranslateX, static_cast<float>(d.dx));
  if (d.dy != 0) out = apply_augment_op(out, AugmentOp::kTranslateY, static_cast<float>(d.dy));
  if (d.brightness != 1) out = apply_augment_op(out, AugmentOp::kBrightness, d.brightness);
  if (d.contrast != 1) out = apply_augment_op(out, AugmentOp::kContrast, d.contrast);
  return out;
}

}  // namespace course
