// The element and per-tensor bodies of the 1-bit optimizers' compressed stage, 1-bit LAMB's as
// DeepSpeed's OnebitLamb computes it (common/parallel/data_parallel/onebit_lamb.h), shared by
// the CPU and the GPU: the multi-tensor
// updates run through optimizer_ops.h's MultiTensorApply (optimizer_kernels.cu), the per-tensor
// coefficients one index per parameter (device_factor.cu), so no step waits for the host.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// x *= mask, elementwise: the 1-bit optimizers' exp_avg_mask on the averaged momentum.
// Slots: x, mask.
struct MultiplyUpdate {
  static constexpr int kSlots = 2;
  static constexpr int kStepScalars = 0;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const {
    slot[0][j] *= slot[1][j];
  }
};

// mask = 1 where v != 0, else 0: the exp_avg_mask of the elements the warm-up never gave a
// gradient (their variance exactly 0). Slots: mask, variance.
struct NonzeroMask {
  static constexpr int kSlots = 2;
  static constexpr int kStepScalars = 0;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const {
    slot[0][j] = slot[1][j] != 0.0f ? 1.0f : 0.0f;
  }
};

// The local half of a 1-bit optimizer's compressed stage: the momentum alone follows the
// gradient (the variance is frozen), m = beta1 m + (1 - beta1) g, before it is averaged over
// the ranks compressed; 1-bit LAMB's (kScaled) then multiplied by its tensor's scaling
// coefficient s, so the whole model's momentum compresses as one buffer.
// Slots: momentum, gradient, and the scaling (a scalar slot) where kScaled. No step scalars.
template <bool kScaled>
struct MomentumUpdate {
  static constexpr int kSlots = kScaled ? 3 : 2;
  static constexpr int kScalarSlots = kScaled ? 1 : 0;
  static constexpr int kStepScalars = 0;
  float beta1;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const {
    float& m = slot[0][j];
    m = beta1 * m + (1.0f - beta1) * slot[1][j];
    if constexpr (kScaled) m *= slot[2][0];
  }
};

// 1-bit LAMB's compressed-stage direction from the averaged momentum: the scaling undone
// (m /= s); the gradient rebuilt from the momentum's change, g = (m - beta1 m_last) / (1 -
// beta1), into the fresh variance; the update u = p + wd w with p = m / (sqrt(v) + eps) on the
// frozen variance, written negated; p itself; and the ratio of the frozen denominator to the
// fresh one (sqrt(v) + eps) / (sqrt(v_fresh) + eps), whose largest element sets the factor.
// Slots: parameter, momentum, last step's momentum, frozen variance, fresh variance, negated
// update, p, ratio, scaling (a scalar slot).
struct OneBitLambDirection {
  static constexpr int kSlots = 9;
  static constexpr int kScalarSlots = 1;
  static constexpr int kStepScalars = 0;
  float beta1, beta2, eps, weight_decay;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const {
    float& m = slot[1][j];
    m /= slot[8][0];
    const float g = (m - slot[2][j] * beta1) / (1.0f - beta1);
    float& fresh = slot[4][j];
    fresh = beta2 * fresh + (1.0f - beta2) * g * g;
    const float denominator = sqrtf(slot[3][j]) + eps;
    const float p = m / denominator;
    slot[5][j] = -(p + weight_decay * slot[0][j]);
    slot[6][j] = p;
    slot[7][j] = denominator / (sqrtf(fresh) + eps);
  }
};

// Parameter i's warm-up coefficient: c = |w| / |u| clamped to [min_coeff, max_coeff] where both
// norms are positive, else 1 (squares[2 i], squares[2 i + 1] = |w|^2, |u|^2); wherever c != 1 the
// frozen coefficient's average moves, frozen = coeff_beta frozen + (1 - coeff_beta) c.
struct WarmupLambCoefficient {
  const float* squares;
  float min_coeff, max_coeff, coeff_beta;
  float* coeff;
  float* frozen;
  COURSE_HD void operator()(int64_t i) const {
    const float w = sqrtf(squares[2 * i]), u = sqrtf(squares[2 * i + 1]);
    float c = 1.0f;
    if (w > 0.0f && u > 0.0f) {
      c = w / u;
      if (c > max_coeff) c = max_coeff;
      if (c < min_coeff) c = min_coeff;
    }
    coeff[i] = c;
    if (c != 1.0f) frozen[i] = coeff_beta * frozen[i] + (1.0f - coeff_beta) * c;
  }
};

// The momentum scalings of the first compressed step, one index for all `count` tensors: each
// tensor's root mean square r_i = sqrt(squares[i] / numels[i]), their mean r, and scaling[i] =
// r / r_i (1 for a momentum of zeros), so every tensor enters the one compressed buffer at about
// the same magnitude.
struct MomentumScalings {
  const float* squares;
  const float* numels;
  int64_t count;
  float* scaling;
  COURSE_HD void operator()(int64_t) const {
    float total = 0.0f;
    for (int64_t i = 0; i < count; ++i) total += sqrtf(squares[i] / numels[i]);
    const float united = total / static_cast<float>(count);
    for (int64_t i = 0; i < count; ++i) {
      const float rms = sqrtf(squares[i] / numels[i]);
      scaling[i] = rms > 0.0f ? united / rms : 1.0f;
    }
  }
};

// Parameter i's compressed-stage coefficient, frozen[i] x factor: the factor is the largest
// ratio of the frozen to the fresh denominator (largest_ratio[i]), blended towards 1 by the
// decay's share of the update (squares[2 i], squares[2 i + 1] = |u|^2, |p|^2) when weight_decay >
// 0, clamped to [factor_min, factor_max] and to within factor_threshold of the last step's
// factor, which it replaces.
struct CompressedLambCoefficient {
  const float* squares;
  const float* largest_ratio;
  const float* frozen;
  float weight_decay, factor_min, factor_max, factor_threshold;
  float* last_factor;
  float* coeff;
  COURSE_HD void operator()(int64_t i) const {
    float factor = largest_ratio[i];
    if (weight_decay > 0.0f) {
      const float u = sqrtf(squares[2 * i]), p = sqrtf(squares[2 * i + 1]);
      const float share = u > 0.0f ? fminf(1.0f, p / u) : 1.0f;
      factor = factor * share + (1.0f - share);
    }
    if (factor > factor_max) factor = factor_max;
    if (factor < factor_min) factor = factor_min;
    const float up = last_factor[i] * (1.0f + factor_threshold);
    const float down = last_factor[i] * (1.0f - factor_threshold);
    if (factor > up) factor = up;
    if (factor < down) factor = down;
    last_factor[i] = factor;
    coeff[i] = frozen[i] * factor;
  }
};

}  // namespace course::ops
