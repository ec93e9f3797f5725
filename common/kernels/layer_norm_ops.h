// LayerNorm bodies over the last dimension of a contiguous (rows, cols) tensor, shared by the
// CPU and the GPU: statistics in f32 whatever the activations' dtype, weight and bias f32. The
// forward and the input gradient are row kernels (row_lanes.h); the parameter gradients are
// column sums (column_sums_ops.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

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
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const T* row = x + i * cols;
    const auto value = [row](int64_t j) { return static_cast<float>(row[j]); };
    const float m = lanes.sum(cols, value) / static_cast<float>(cols);
    const float squares = lanes.sum(cols, [&](int64_t j) {
      const float d = value(j) - m;
      return d * d;
    });
    const float r = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    lanes.for_each(
        cols, [&](int64_t j) { y[i * cols + j] = T((value(j) - m) * r * weight[j] + bias[j]); });
    if (lanes.first()) {
      mean[i] = m;
      rstd[i] = r;
    }
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
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const float m = mean[i], r = rstd[i];
    const auto g = [&](int64_t j) { return static_cast<float>(dy[i * cols + j]) * weight[j]; };
    const auto xhat = [&](int64_t j) { return (static_cast<float>(x[i * cols + j]) - m) * r; };
    const FloatPair sums = lanes.sum_pair(cols, [&](int64_t j) {
      return FloatPair{g(j), g(j) * xhat(j)};
    });
    const float g_mean = sums.first / static_cast<float>(cols);
    const float gx_mean = sums.second / static_cast<float>(cols);
    lanes.for_each(
        cols, [&](int64_t j) { dx[i * cols + j] = T(r * (g(j) - g_mean - xhat(j) * gx_mean)); });
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
