// Per-element parameter updates of the optimizers, shared by the CPU and the GPU. Parameters,
// gradients and optimizer state are f32 (the master weights of mixed precision).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// SGD with momentum and L2 weight decay, as PyTorch defines it: g = grad + wd * p;
// buf = g on the first step, else mom * buf + g; step along buf (or g + mom * buf, Nesterov).
struct SgdUpdate {
  float* param;
  const float* grad;
  float* momentum_buffer;
  float lr, momentum, weight_decay;
  bool nesterov, first_step;
  COURSE_HD void operator()(int64_t i) const {
    const float g = grad[i] + weight_decay * param[i];
    float step = g;
    if (momentum != 0.0f) {
      const float buf = first_step ? g : momentum * momentum_buffer[i] + g;
      momentum_buffer[i] = buf;
      step = nesterov ? g + momentum * buf : buf;
    }
    param[i] -= lr * step;
  }
};

// AdamW: decoupled weight decay, then Adam with bias correction (step t >= 1).
struct AdamWUpdate {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float lr, beta1, beta2, eps, weight_decay;
  float bias_correction1, bias_correction2;  // 1 - beta^t
  COURSE_HD void operator()(int64_t i) const {
    const float g = grad[i];
    param[i] -= lr * weight_decay * param[i];
    exp_avg[i] = beta1 * exp_avg[i] + (1.0f - beta1) * g;
    exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1.0f - beta2) * g * g;
    const float denom = sqrtf(exp_avg_sq[i] / bias_correction2) + eps;
    param[i] -= lr * (exp_avg[i] / bias_correction1) / denom;
  }
};

}  // namespace course::ops
