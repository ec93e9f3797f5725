// LayerNorm and RMSNorm bodies over the last dimension of a contiguous (rows, cols) tensor,
// shared by the CPU and the GPU: statistics in f32 whatever the activations' dtype, weight and
// bias f32. RMSNorm (Llama's) is LayerNorm without the centring: no mean subtracted, no bias,
// so one template serves both (kCentered). The forward and the input gradient are row kernels
// (row_lanes.h); the parameter gradients are column sums (column_sums_ops.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

// Row i: mean (LayerNorm) and r = 1/sqrt(var + eps), the variance about the mean (LayerNorm)
// or about 0 (RMSNorm: the mean square); then y = (x - mean) r w (+ b). RMSNorm leaves `mean`
// and `bias` null.
template <class T, bool kCentered>
struct NormForward {
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
    float m = 0.0f;
    if constexpr (kCentered) m = lanes.sum(cols, value) / static_cast<float>(cols);
    const float squares = lanes.sum(cols, [&](int64_t j) {
      const float d = value(j) - m;
      return d * d;
    });
    const float r = 1.0f / sqrtf(squares / static_cast<float>(cols) + eps);
    lanes.for_each(cols, [&](int64_t j) {
      const float scaled = (value(j) - m) * r * weight[j];
      if constexpr (kCentered) {
        y[i * cols + j] = T(scaled + bias[j]);
      } else {
        y[i * cols + j] = T(scaled);
      }
    });
    if (lanes.first()) {
      if constexpr (kCentered) mean[i] = m;
      rstd[i] = r;
    }
  }
};

// Row i: with g = dy w and xhat = (x - mean) r, dx = r (g - mean_j(g) - xhat mean_j(g xhat));
// RMSNorm has no mean, and no mean_j(g) term.
template <class T, bool kCentered>
struct NormBackwardInput {
  const T* dy;
  const T* x;
  const float* weight;
  const float* mean;
  const float* rstd;
  T* dx;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const float m = kCentered ? mean[i] : 0.0f, r = rstd[i];
    const auto g = [&](int64_t j) { return static_cast<float>(dy[i * cols + j]) * weight[j]; };
    const auto xhat = [&](int64_t j) { return (static_cast<float>(x[i * cols + j]) - m) * r; };
    const FloatPair sums = lanes.sum_pair(cols, [&](int64_t j) {
      return FloatPair{kCentered ? g(j) : 0.0f, g(j) * xhat(j)};
    });
    const float g_mean = sums.first / static_cast<float>(cols);
    const float gx_mean = sums.second / static_cast<float>(cols);
    lanes.for_each(
        cols, [&](int64_t j) { dx[i * cols + j] = T(r * (g(j) - g_mean - xhat(j) * gx_mean)); });
  }
};

// The summands of the parameter gradients per column j (column_sums_ops.h adds them up):
// dweight[j] += dy[i, j] xhat[i, j], and LayerNorm's dbias[j] += dy[i, j].
template <class T, bool kCentered>
struct NormParamTerms {
  static constexpr int kSums = kCentered ? 2 : 1;
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  int64_t cols;
  COURSE_HD void add(int64_t i, int64_t j, float* acc) const {
    const float d = static_cast<float>(dy[i * cols + j]);
    const float m = kCentered ? mean[i] : 0.0f;
    acc[0] += d * (static_cast<float>(x[i * cols + j]) - m) * rstd[i];
    if constexpr (kCentered) acc[1] += d;
  }
};

}  // namespace course::ops
