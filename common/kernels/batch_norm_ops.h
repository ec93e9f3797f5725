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
#include "common/kernels/index4.h"

namespace course::ops {

struct ChannelLoop {
  int64_t n, c, h, w;
  Strides4 s;
  COURSE_HD int64_t count() const { return n * h * w; }
  // Offset of the k-th of the M values of channel `ch`.
  COURSE_HD int64_t offset(int64_t ch, int64_t k) const {
    const int64_t iw = k % w, ih = (k / w) % h, in = k / (w * h);
    return s.at(in, ch, ih, iw);
  }
  // Channel of the i-th element in logical (N, C, H, W) order, and its offset.
  COURSE_HD int64_t channel_of(int64_t i) const { return (i / (w * h)) % c; }
  COURSE_HD int64_t offset_of(int64_t i) const {
    return s.at(i / (w * h * c), channel_of(i), (i / w) % h, i % w);
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
    for (int64_t k = 0; k < m; ++k) sum += static_cast<float>(x[loop.offset(ch, k)]);
    const float mu = sum / static_cast<float>(m);
    float squares = 0.0f;
    for (int64_t k = 0; k < m; ++k) {
      const float d = static_cast<float>(x[loop.offset(ch, k)]) - mu;
      squares += d * d;
    }
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

// Per element: y = (x - mean) * invstd * gamma + beta.
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
    const int64_t ch = loop.channel_of(i), at = loop.offset_of(i);
    const float xhat = (static_cast<float>(x[at]) - mean[ch]) * invstd[ch];
    y[at] = T(xhat * gamma[ch] + beta[ch]);
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
    for (int64_t k = 0; k < loop.count(); ++k) {
      const int64_t at = loop.offset(ch, k);
      const float g = static_cast<float>(dy[at]);
      a += g;
      b += g * (static_cast<float>(x[at]) - mean[ch]) * invstd[ch];
    }
    sum_dy[ch] = a;
    sum_dy_xhat[ch] = b;
    dbeta[ch] += a;
    dgamma[ch] += b;
  }
};

// Per element: dx of batch normalisation in training mode.
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
    const int64_t ch = loop.channel_of(i), at = loop.offset_of(i);
    const float m = static_cast<float>(loop.count());
    const float xhat = (static_cast<float>(x[at]) - mean[ch]) * invstd[ch];
    const float g = static_cast<float>(dy[at]);
    dx[at] = T(gamma[ch] * invstd[ch] / m * (m * g - sum_dy[ch] - xhat * sum_dy_xhat[ch]));
  }
};

}  // namespace course::ops
