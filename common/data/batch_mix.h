// MixUp and CutMix of whole batches (the course's day 3, as timm does them): every sample is
// mixed with its partner in the flipped batch (i with N-1-i), lambda ~ Beta(alpha, alpha), the
// image blended (MixUp) or a box of side sqrt(1 - lambda) of the image pasted from the partner
// (CutMix; the box clipped to the image, border included, and lambda recomputed from its area),
// and the targets lambda smooth(y_i) + (1 - lambda) smooth(y_partner). Modes: one lambda for the
// batch, one per pair (i and N-1-i), or one per element. The draws happen here, on the host;
// the pixels and targets are mixed by device kernels (common/kernels/batch_mix.h), so the CPU
// runs the arithmetic the GPU runs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

enum class MixMode { kBatch, kPair, kElement };
// "batch", "pair", "elem"; and every mode with its name, for the flags.
const char* mix_mode_name(MixMode mode);
std::vector<std::pair<std::string, MixMode>> mix_mode_choices();

struct MixOptions {
  float mixup_alpha = 0.8f;   // Beta's alpha for MixUp; 0: no MixUp
  float cutmix_alpha = 1.0f;  // for CutMix; 0: no CutMix
  float prob = 1.0f;          // of mixing at all (per batch, pair or element)
  float switch_prob = 0.5f;   // of CutMix rather than MixUp when both are on
  MixMode mode = MixMode::kBatch;
  float label_smoothing = 0.1f;
};

// One batch's mixing, per sample: the weight of its own pixels outside its box, its box
// [y0, y1, x0, x1) (empty for MixUp or no mixing), and lambda, the weight of its own label.
struct MixPlan {
  std::vector<float> weights, lambdas;
  std::vector<int32_t> boxes;  // 4 per sample
};

// Throws on negative alphas (or both 0), probabilities outside [0, 1] or smoothing outside
// [0, 1).
void validate(const MixOptions& options);

// A draw from Beta(alpha, alpha), alpha > 0 (the ratio of two Gamma(alpha) draws).
float sample_beta(float alpha, std::mt19937& rng);

// A CutMix cut: the box [y0, y1, x0, x1) pasted from the partner, and lambda recomputed from
// its area (the weight of the sample's own label).
struct CutMixCut {
  std::array<int32_t, 4> box = {0, 0, 0, 0};
  float lambda = 1.0f;
};

// The cut for a drawn `lambda`: sides sqrt(1 - lambda) of the image's, centred on a uniformly
// drawn pixel, clipped to the image, lambda = 1 - box area / image area.
CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng);

using CutMixCutter =
    std::function<CutMixCut(float lambda, int64_t height, int64_t width, std::mt19937& rng)>;

// Throws on an odd batch (the flipped partners pair up) or options out of range. `cut` makes the
// CutMix boxes (the day-3 lab passes the trainee's).
MixPlan plan_batch_mix(int64_t samples, int64_t height, int64_t width, const MixOptions& options,
                       std::mt19937& rng, const CutMixCutter& cut = cutmix_cut);

struct MixedBatch {
  Tensor images;   // as the input: (N, C, H, W), its dtype, memory format and device
  Tensor targets;  // (N, classes) f32
};

// `plan` applied to images (N, C, H, W) and labels (N,) i64 on their device.
MixedBatch mix_batch(const Tensor& images, const Tensor& labels, const MixPlan& plan,
                     int64_t classes, float label_smoothing);

// The images alone, mixed as `plan` says, on their device.
Tensor mix_images(const Tensor& images, const MixPlan& plan);

}  // namespace course
