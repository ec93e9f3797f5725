// Random flip, translation, brightness and contrast of one image: the augmentation the day-3
// lab runs either per sample in the loader's workers (apply_jitter, on u8 pixels with OpenCV) or
// on the whole batch on the training device (batch_augment.h), with the same draws, so the two
// places can be compared. Applied in that order: flip, move, brightness, contrast.
#pragma once

#include <random>

#include "common/data/cv_mat_fwd.h"

namespace course {

struct JitterOptions {
  int max_translate = 0;  // dx, dy uniform in [-t, t] pixels
  float brightness = 0;   // factor uniform in [1 - b, 1 + b]
  float contrast = 0;     // factor uniform in [1 - c, 1 + c]

  bool active() const { return max_translate > 0 || brightness > 0 || contrast > 0; }
};

// Throws on a negative translation or a strength outside [0, 1].
void validate(const JitterOptions& options);

struct JitterDraw {
  bool flip = false;
  int dx = 0, dy = 0;
  float brightness = 1, contrast = 1;
};

// One image's draws; the flip with probability 1/2 when `flip`.
JitterDraw draw_jitter(const JitterOptions& options, bool flip, std::mt19937& rng);

// `image` (u8, 1 or 3 channels) flipped, moved, brightened and contrasted as `draw` says.
cv::Mat apply_jitter(const cv::Mat& image, const JitterDraw& draw);

}  // namespace course
