// Scalings whose factor is computed on the device from norms summed there, so a step that clips
// its gradient or applies a trust ratio never reads a norm back to the host: bodies shared by the
// CPU and the GPU (device_factor.h).
#pragma once

#include <cstdint>

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
// largest finite norm, clipped steps, steps}, the norms divided by grad_scale; the norm also goes
// to *history (the step's slot in a log of norms read later).
struct ClipFactor {
  const float* squared_norm;
  float max_norm, grad_scale;
  float* factor;
  float* stats;
  float* history;
  COURSE_HD void operator()(int64_t) const {
    const float norm = sqrtf(squared_norm[0]);
    const bool clip = finite(norm) && norm > max_norm;
    factor[0] = clip ? max_norm / (norm + 1e-6f) : 1.0f;
    const float unscaled = norm / grad_scale;
    stats[0] = unscaled;
    history[0] = unscaled;
    if (finite(unscaled) && unscaled > stats[1]) stats[1] = unscaled;
    stats[2] += clip ? 1.0f : 0.0f;
    stats[3] += 1.0f;
  }
};

// One index: the layer-wise trust ratio of LARS (You et al. 2017) and LAMB (You et al. 2019)
// from squares {|w|^2, |u|^2} of a weight and its update direction: eta |w| / (|u| + wd |w|)
// where both norms are positive, else 1. LAMB is eta 1, wd 0.
struct TrustRatio {
  const float* squares;
  float eta, weight_decay;
  float* factor;
  COURSE_HD void operator()(int64_t) const {
    const float w = sqrtf(squares[0]), u = sqrtf(squares[1]);
    const float denominator = u + weight_decay * w;
    factor[0] = w > 0.0f && u > 0.0f && denominator > 0.0f ? eta * w / denominator : 1.0f;
  }
};

}  // namespace course::ops
