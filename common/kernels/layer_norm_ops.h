// LayerNorm bodies over the last dimension of a contiguous (rows, cols) tensor, shared by the
// CPU and the GPU: statistics in f32 whatever the activations' dtype, weight and bias f32.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Row i: mean and 1/sqrt(var + eps) (two passes), then y = (x - mean) rstd w + b.
template <class T>
struct LayerNormForward {
  const T* x;
  const float* weight;
  const float* bias;
  T* y;
  float* mean;
  float* rstd;
  int64_t cols;
  float eps;
  COURSE_HD void operator()(int64_t i) const {
    const T* row = x + i * cols;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += static_cast<float>(row[j]);
    const float m = sum / static_cast<float>(cols);
    float squares = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      const float d = static_cast<float>(row[j]) - m;
      squares += d * d;
    }
    const float r = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      y[i * cols + j] = T((static_cast<float>(row[j]) - m) * r * weight[j] + bias[j]);
    }
    mean[i] = m;
    rstd[i] = r;
  }
};

// Row i: with g = dy w and xhat = (x - mean) rstd,
// dx = rstd (g - mean_j(g) - xhat mean_j(g xhat)).
template <class T>
struct LayerNormBackwardInput {
  const T* dy;
  const T* x;
  const float* weight;
  const float* mean;
  const float* rstd;
  T* dx;
  int64_t cols;
  COURSE_HD void operator()(int64_t i) const {
    float g_sum = 0.0f, gx_sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      const float g = static_cast<float>(dy[i * cols + j]) * weight[j];
      const float xhat = (static_cast<float>(x[i * cols + j]) - mean[i]) * rstd[i];
      g_sum += g;
      gx_sum += g * xhat;
    }
    const float g_mean = g_sum / static_cast<float>(cols);
    const float gx_mean = gx_sum / static_cast<float>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const float g = static_cast<float>(dy[i * cols + j]) * weight[j];
      const float xhat = (static_cast<float>(x[i * cols + j]) - mean[i]) * rstd[i];
      dx[i * cols + j] = T(rstd[i] * (g - g_mean - xhat * gx_mean));
    }
  }
};

// The summands of LayerNorm's parameter gradients per column j (column_sums_ops.h adds them
// up): dweight[j] += dy[i, j] xhat[i, j], dbias[j] += dy[i, j].
template <class T>
struct LayerNormParamTerms {
  static constexpr int kSums = 2;
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  int64_t cols;
  COURSE_HD void add(int64_t i, int64_t j, float* acc) const {
    const float d = static_cast<float>(dy[i * cols + j]);
    acc[0] += d * (static_cast<float>(x[i * cols + j]) - mean[i]) * rstd[i];
    acc[1] += d;
  }
};

}  // namespace course::ops
