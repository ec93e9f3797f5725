// Scalings whose factor is computed on the device from norms summed there, so a step that clips
// its gradient, applies a trust ratio or scales its loss never reads a value back to the host:
// bodies shared by the CPU and the GPU (device_factor.h).
#pragma once

#include <cmath>
#include <cstdint>
#ifndef __CUDA_ARCH__
#include <atomic>
#endif

#include "common/core/host_device.h"

namespace course::ops {

// Not NaN and not infinite (inf - inf is NaN), the same test on the host and in a kernel.
COURSE_HD inline bool finite(float v) { return v - v == 0.0f; }

// x[i] *= factor[0].
template <class T>
struct ScaleByFactor {
  T* x;
  const float* factor;
  COURSE_HD void operator()(int64_t i) const { x[i] = T(static_cast<float>(x[i]) * factor[0]); }
};

// One index: gradient clipping by global norm (torch.nn.utils.clip_grad_norm_). The norm is
// sqrt(squared_norm[0]); the factor min(1, max_norm / (norm + 1e-6)), or 1 for a norm that is not
// finite (an overflowed mixed-precision step, which the loss scaler skips). stats: {last norm,
// largest finite norm, clipped steps, steps}, the norms divided by the loss scale (gradients
// still scaled are clipped to max_norm x scale: the unscaled ones to max_norm); the norm also
// goes to *history (the step's slot in a log of norms read later).
struct ClipFactor {
  const float* squared_norm;
  float max_norm;
  const float* loss_scale;  // null: 1
  float* factor;
  float* stats;
  float* history;
  COURSE_HD void operator()(int64_t) const {
    const float norm = sqrtf(squared_norm[0]);
    const float grad_scale = loss_scale != nullptr ? loss_scale[0] : 1.0f;
    const float limit = max_norm * grad_scale;
    const bool clip = finite(norm) && norm > limit;
    factor[0] = clip ? limit / (norm + 1e-6f) : 1.0f;
    const float unscaled = norm / grad_scale;
    stats[0] = unscaled;
    history[0] = unscaled;
    if (finite(unscaled) && unscaled > stats[1]) stats[1] = unscaled;
    stats[2] += clip ? 1.0f : 0.0f;
    stats[3] += 1.0f;
  }
};

// Index i: the layer-wise trust ratio of LARS (You et al. 2017) and LAMB (You et al. 2019) of
// tensor i from squares {|w|^2, |u|^2} at 2 i, 2 i + 1 of a weight and its update direction:
// eta |w| / (|u| + wd |w|) where both norms are positive, else 1. LAMB is eta 1, wd 0.
struct TrustRatio {
  const float* squares;
  float eta, weight_decay;
  float* factor;
  COURSE_HD void operator()(int64_t i) const {
    const float w = sqrtf(squares[2 * i]), u = sqrtf(squares[2 * i + 1]);
    const float denominator = u + weight_decay * w;
    factor[i] = w > 0.0f && u > 0.0f && denominator > 0.0f ? eta * w / denominator : 1.0f;
  }
};

// Dynamic loss scaling's state on the device: {scale, found_inf, clean steps in a row, skipped
// steps, overflows still tolerated before the scale backs off (DeepSpeed's hysteresis)}.
enum LossScaleSlot {
  kScale = 0,
  kFoundInf = 1,
  kCleanSteps = 2,
  kSkipped = 3,
  kHysteresisLeft = 4,
  kLossScaleSlots = 5
};

// x[i] /= the scale; found_inf = 1 where the result is NaN or infinite.
template <class T>
struct UnscaleAndMark {
  T* x;
  float* state;
  COURSE_HD void operator()(int64_t i) const {
    const float v = static_cast<float>(x[i]) * (1.0f / state[kScale]);
    x[i] = T(v);
    if (!finite(v)) {
#ifdef __CUDA_ARCH__
      state[kFoundInf] = 1.0f;  // every writer stores the same value
#else
      std::atomic_ref<float>(state[kFoundInf]).store(1.0f, std::memory_order_relaxed);
#endif
    }
  }
};

// One index, as DeepSpeed's DynamicLossScaler.update_scale: after an overflow the step counts as
// skipped, the run of clean steps restarts, and the scale backs off (times backoff, not below
// min_scale) once the overflows tolerated are spent (hysteresis 1: at every overflow, as
// PyTorch's GradScaler); after `interval` clean steps in a row the scale times growth, the
// tolerance restored.
struct LossScaleUpdate {
  float* state;
  float growth, backoff;
  float interval, hysteresis, min_scale;
  COURSE_HD void operator()(int64_t) const {
    if (state[kFoundInf] != 0.0f) {
      state[kCleanSteps] = 0.0f;
      state[kSkipped] += 1.0f;
      if (state[kHysteresisLeft] > 1.0f) {
        state[kHysteresisLeft] -= 1.0f;
        return;
      }
      const float backed_off = state[kScale] * backoff;
      state[kScale] = backed_off > min_scale ? backed_off : min_scale;
      return;
    }
    state[kCleanSteps] += 1.0f;
    if (state[kCleanSteps] >= interval) {
      state[kScale] *= growth;
      state[kCleanSteps] = 0.0f;
      state[kHysteresisLeft] = hysteresis;
    }
  }
};

}  // namespace course::ops
