// Parameter updates of the optimizers, shared by the CPU and the GPU, applied to many tensors
// in one launch ("multi-tensor" or fused updates, as PyTorch's foreach/fused optimizers).
// Index s covers `span` elements of the concatenation of all parameters: it finds the tensor of
// its first element by binary search over the offsets, then updates through a table of K
// pointers per tensor, crossing into the next tensors as needed. The GPU runs a span of one
// element per thread; the CPU a few thousand, a loop that vectorises. Parameters, gradients and
// optimizer state are f32 (the master weights of mixed precision). A non-null `skip` that holds
// a non-zero value (the loss scaler's found-inf flag) makes the whole update a no-op, decided on
// the device.
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
  int64_t span;  // elements per index
  Update update;
  const float* skip;  // null: never
  COURSE_HD void operator()(int64_t s) const {
    if (skip != nullptr && skip[0] != 0.0f) return;
    const int64_t begin = s * span, total = offsets[count];
    const int64_t end = begin + span < total ? begin + span : total;
    // Locals the stores cannot alias: the compiler keeps them in registers.
    const Update u = update;
    const typename Update::Step step = u.step();
    for (int64_t tensor = tensor_holding(begin), i = begin; i < end; ++tensor) {
      const int64_t first = offsets[tensor];
      const int64_t stop = offsets[tensor + 1] < end ? offsets[tensor + 1] : end;
      float* slot[K];
      for (int k = 0; k < K; ++k) slot[k] = table[tensor * K + k];
      for (int64_t j = i - first; j < stop - first; ++j) u(step, slot, j);
      i = stop;
    }
  }
  COURSE_HD int64_t tensor_holding(int64_t i) const {
    int64_t lo = 0, hi = count;
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (offsets[mid] <= i) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
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
  struct Step {
    float lr;
    bool first_step;
  };
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1] != 0.0f}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
    const bool first_step = s.first_step;
    float& param = slot[0][j];
    const float g = slot[1][j] + weight_decay * param;
    float direction = g;
    if (momentum != 0.0f) {
      const float buf = first_step ? g : momentum * slot[2][j] + g;
      slot[2][j] = buf;
      direction = nesterov ? g + momentum * buf : buf;
    }
    param -= lr * direction;
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
  struct Step {
    float lr, bias_correction1, bias_correction2;
  };
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1], step_scalars[2]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
    const float bias_correction1 = s.bias_correction1, bias_correction2 = s.bias_correction2;
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

// The local half of a 1-bit optimizer's compressed stage: the momentum alone follows the
// gradient (the variance is frozen), before the momentum is averaged over the ranks compressed.
// Slots: momentum, gradient. No step scalars.
struct MomentumUpdate {
  static constexpr int kSlots = 2;
  static constexpr int kStepScalars = 0;
  float beta1;
  struct Step {};
  COURSE_HD Step step() const { return {}; }
  COURSE_HD void operator()(const Step&, float* const* slot, int64_t j) const {
    float& m = slot[0][j];
    m = beta1 * m + (1.0f - beta1) * slot[1][j];
  }
};

// AdamW's step from a momentum already updated (and averaged) and a frozen variance: the
// parameter moves as in AdamWUpdate, the moments stay. Slots: parameter, first moment, second
// moment. Step scalars: lr, 1 - beta1^t, 1 - beta2^t at the step the variance froze.
struct FrozenVarianceUpdate {
  static constexpr int kSlots = 3;
  static constexpr int kStepScalars = 3;
  const float* step_scalars;
  float eps, weight_decay;
  using Step = AdamWUpdate::Step;
  COURSE_HD Step step() const { return {step_scalars[0], step_scalars[1], step_scalars[2]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    float& param = slot[0][j];
    param -= s.lr * weight_decay * param;
    param -=
        s.lr * (slot[1][j] / s.bias_correction1) / (sqrtf(slot[2][j] / s.bias_correction2) + eps);
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
  struct Step {
    float lr;
  };
  COURSE_HD Step step() const { return {step_scalars[0]}; }
  COURSE_HD void operator()(const Step& s, float* const* slot, int64_t j) const {
    const float lr = s.lr;
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
