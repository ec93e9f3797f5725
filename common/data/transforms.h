// The course's image transforms, as torchvision defines them, on decoded images (H, W, C u8), a
// list of per-sample steps run in order as torchvision's Compose runs them:
//   training:   RandomResizedCrop(size, scale 0.08-1, ratio 3/4-4/3) + horizontal flip (p 0.5)
//               + the jitter of jitter.h (none by default)
//               + the automatic augmentation policy (RandAugment, TrivialAugmentWide; none by
//               default), in torchvision's Compose order
//   validation: the central crop covering `eval_crop_fraction` of the shorter side (0.875 is
//               ImageNet's "resize 256, centre-crop 224"), resized to size
// then per-channel normalisation ((x / 255 - mean) / std) into planar (C, S, S) floats.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "common/data/augment_policy.h"
#include "common/data/cv_mat_fwd.h"
#include "common/data/jitter.h"
#include "common/tensor/tensor.h"

namespace course {

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
};

// torchvision's RandomResizedCrop box: up to 10 draws of an area fraction in `scale` and a
// log-uniform aspect ratio in `ratio`; if none fits, the central crop at the nearest ratio.
CropBox random_resized_crop_box(int width, int height, std::mt19937& rng, float min_scale = 0.08f,
                                float max_scale = 1.0f, float min_ratio = 3.0f / 4.0f,
                                float max_ratio = 4.0f / 3.0f);

// The centred square whose side is `fraction` of the shorter side.
CropBox center_crop_box(int width, int height, float fraction);

// One per-sample step on a decoded u8 image (grey or RGB), drawing what it needs from the
// sample's generator; it returns a new image or a view, never writing into its input, and may
// run on several worker threads at once.
using ImageStep = std::function<cv::Mat(const cv::Mat& image, std::mt19937& rng)>;

struct TransformOptions {
  int64_t size = 28;                   // output side
  bool train = true;                   // random crop and flip (else the centre crop)
  bool random_crop = true;             // with train: RandomResizedCrop (off: the whole image)
  bool flip = true;                    // with train: horizontal flip with probability 1/2
  float eval_crop_fraction = 1.0f;     // validation crop, as a fraction of the shorter side
  JitterOptions jitter;                // with train: after the flip
  AugmentPolicy policy;                // with train: after the jitter
  std::vector<ImageStep> extra_steps;  // with train: after the policy (a lab's own steps)
  std::vector<float> mean = {0.2860f}, std = {0.3530f};  // one per channel
};

// The steps `options` describe, in order: the crop resized to `size`, then with train the flip
// and jitter, the policy and the extra steps.
std::vector<ImageStep> compose(const TransformOptions& options);

// Runs compose(options) on the (H, W, C) u8 `image` and normalises the result into
// out[C * size * size]; `rng` decides the random parts. The image's channel count must match
// mean/std.
void transform_image(const Tensor& image, const TransformOptions& options, std::mt19937& rng,
                     float* out);

// The same with the steps composed once (the DataLoader's per-sample path); `options` gives
// the size and the normalisation.
void transform_image(const Tensor& image, const std::vector<ImageStep>& steps,
                     const TransformOptions& options, std::mt19937& rng, float* out);

}  // namespace course
