// Parameter updates of the optimizers, shared by the CPU and the GPU, applied to many tensors
// in one launch ("multi-tensor" or fused updates, as PyTorch's foreach/fused optimizers):
// element i of the concatenation of all parameters finds its tensor by binary search over
// the offsets, then updates through a table of K pointers per tensor. Parameters, gradients
// and optimizer state are f32 (the master weights of mixed precision).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

template <int K, class Update>
struct MultiTensorApply {
  float* const* table;     // count x K pointers
  const int64_t* offsets;  // count + 1 running element counts
  int64_t count;
  Update update;
  COURSE_HD void operator()(int64_t i) const {
    int64_t lo = 0, hi = count;
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (offsets[mid] <= i) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    update(table + lo * K, i - offsets[lo]);
  }
};

// SGD with momentum and L2 weight decay, as PyTorch defines it: g = grad + wd * p;
// buf = g on the first step, else mom * buf + g; step along buf (or g + mom * buf, Nesterov).
// Slots: parameter, gradient, momentum buffer. Step scalars: lr, first step (1 or 0).
struct SgdUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 2;
  const float* step_scalars;
  float momentum, weight_decay;
  bool nesterov;
  COURSE_HD void operator()(float* const* slot, int64_t j) const {
    const float lr = step_scalars[0];
    const bool first_step = step_scalars[1] != 0.0f;
    float& param = slot[0][j];
    const float g = slot[1][j] + weight_decay * param;
    float step = g;
    if (momentum != 0.0f) {
      const float buf = first_step ? g : momentum * slot[2][j] + g;
      slot[2][j] = buf;
      step = nesterov ? g + momentum * buf : buf;
    }
    param -= lr * step;
  }
};

// AdamW: decoupled weight decay, then Adam with bias correction (1 - beta^t, step t >= 1).
// Slots: parameter, gradient, first moment, second moment. Step scalars: lr, 1 - beta1^t,
// 1 - beta2^t.
struct AdamWUpdate {
  static constexpr int kSlots = 4;
  static constexpr int kStepScalars = 3;
  const float* step_scalars;
  float beta1, beta2, eps, weight_decay;
  COURSE_HD void operator()(float* const* slot, int64_t j) const {
    const float lr = step_scalars[0];
    const float bias_correction1 = step_scalars[1], bias_correction2 = step_scalars[2];
    float& param = slot[0][j];
    const float g = slot[1][j];
    float& m = slot[2][j];
    float& v = slot[3][j];
    param -= lr * weight_decay * param;
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    param -= lr * (m / bias_correction1) / (sqrtf(v / bias_correction2) + eps);
  }
};

// Lion: the step is the sign of an interpolation between the momentum and the gradient, with
// decoupled weight decay; the momentum then tracks the gradient with the slower beta2.
// Slots: parameter, gradient, momentum. Step scalars: lr.
struct LionUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 1;
  const float* step_scalars;
  float beta1, beta2, weight_decay;
  COURSE_HD void operator()(float* const* slot, int64_t j) const {
    const float lr = step_scalars[0];
    float& param = slot[0][j];
    const float g = slot[1][j];
    float& m = slot[2][j];
    const float c = beta1 * m + (1.0f - beta1) * g;
    const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
    param -= lr * weight_decay * param;
    param -= lr * sign;
    m = beta2 * m + (1.0f - beta2) * g;
  }
};

}  // namespace course::ops
