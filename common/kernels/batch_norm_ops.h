// Per-channel batch normalisation bodies, shared by the CPU and the GPU, for either memory
// format (elements are addressed through Strides4).
//
// Training: mean and variance over the M = N*H*W values of each channel (two passes, for
// accuracy), y = (x - mean) * invstd * gamma + beta, running statistics updated with the
// unbiased variance. Backward: dbeta = sum dy, dgamma = sum dy * xhat, and
// dx = gamma * invstd / M * (M * dy - dbeta - xhat * dgamma).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Addressing of the M = N*H*W values of one channel in a dense NCHW or NHWC tensor: value
// (n, k) with k = h*W + w sits at n*stride_n + channel*stride_c + k*stride_k, and the element
// at storage index i belongs to channel (i / inner) % C (inner = H*W for NCHW, 1 for NHWC).
struct ChannelLoop {
  int64_t n, c, hw;
  int64_t stride_n, stride_c, stride_k, inner;
  COURSE_HD int64_t count() const { return n * hw; }
  COURSE_HD int64_t channel_at(int64_t i) const { return (i / inner) % c; }
  template <class F>
  COURSE_HD void for_each_value(int64_t ch, F f) const {
    for (int64_t in = 0; in < n; ++in) {
      const int64_t base = in * stride_n + ch * stride_c;
      for (int64_t k = 0; k < hw; ++k) f(base + k * stride_k);
    }
  }
};

// Per channel: batch mean and 1/sqrt(var + eps); running statistics updated when given.
template <class T>
struct BatchNormStats {
  const T* x;
  ChannelLoop loop;
  float eps, momentum;
  float* mean;
  float* invstd;
  float* running_mean;  // may be null
  float* running_var;

  COURSE_HD void operator()(int64_t ch) const {
    const int64_t m = loop.count();
    float sum = 0.0f;
    loop.for_each_value(ch, [&](int64_t at) { sum += static_cast<float>(x[at]); });
    const float mu = sum / static_cast<float>(m);
    float squares = 0.0f;
    loop.for_each_value(ch, [&](int64_t at) {
      const float d = static_cast<float>(x[at]) - mu;
      squares += d * d;
    });
    const float var = squares / static_cast<float>(m);
    mean[ch] = mu;
    invstd[ch] = 1.0f / sqrtf(var + eps);
    if (running_mean != nullptr) {
      const float unbiased = m > 1 ? squares / static_cast<float>(m - 1) : var;
      running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mu;
      running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unbiased;
    }
  }
};

// Per channel: invstd from a (running) variance, for evaluation.
struct InvStdFromVariance {
  const float* var;
  float eps;
  float* invstd;
  COURSE_HD void operator()(int64_t ch) const { invstd[ch] = 1.0f / sqrtf(var[ch] + eps); }
};

// Per element (storage index): y = (x - mean) * invstd * gamma + beta.
template <class T>
struct BatchNormApply {
  const T* x;
  T* y;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t ch = loop.channel_at(i);
    const float xhat = (static_cast<float>(x[i]) - mean[ch]) * invstd[ch];
    y[i] = T(xhat * gamma[ch] + beta[ch]);
  }
};

// Per channel: sum dy and sum dy * xhat into `sum_dy`, `sum_dy_xhat`, and add them to the
// parameter gradients dbeta and dgamma.
template <class T>
struct BatchNormGradSums {
  const T* x;
  const T* dy;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  float* sum_dy;
  float* sum_dy_xhat;
  float* dgamma;
  float* dbeta;
  COURSE_HD void operator()(int64_t ch) const {
    float a = 0.0f, b = 0.0f;
    loop.for_each_value(ch, [&](int64_t at) {
      const float g = static_cast<float>(dy[at]);
      a += g;
      b += g * (static_cast<float>(x[at]) - mean[ch]) * invstd[ch];
    });
    sum_dy[ch] = a;
    sum_dy_xhat[ch] = b;
    dbeta[ch] += a;
    dgamma[ch] += b;
  }
};

// Per element (storage index): dx of batch normalisation in training mode.
template <class T>
struct BatchNormBackwardApply {
  const T* x;
  const T* dy;
  T* dx;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* sum_dy;
  const float* sum_dy_xhat;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t ch = loop.channel_at(i);
    const float m = static_cast<float>(loop.count());
    const float xhat = (static_cast<float>(x[i]) - mean[ch]) * invstd[ch];
    const float g = static_cast<float>(dy[i]);
    dx[i] = T(gamma[ch] * invstd[ch] / m * (m * g - sum_dy[ch] - xhat * sum_dy_xhat[ch]));
  }
};

}  // namespace course::ops
