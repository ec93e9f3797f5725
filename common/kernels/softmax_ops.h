// Softmax bodies over the last dimension of a contiguous (rows, cols) tensor, shared by the CPU
// and the GPU as row kernels (row_lanes.h), computed in f32 whatever the dtype.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// Row i: y = exp(x - max) / sum(exp(x - max)).
template <class T>
struct SoftmaxForward {
  const T* x;
  T* y;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const T* row = x + i * cols;
    const auto value = [row](int64_t j) { return static_cast<float>(row[j]); };
    const float m = lanes.max(cols, value);
    const float sum = lanes.sum(cols, [&](int64_t j) { return expf(value(j) - m); });
    lanes.for_each(cols, [&](int64_t j) { y[i * cols + j] = T(expf(value(j) - m) / sum); });
  }
};

// Row i: dx = y (dy - sum_j dy_j y_j).
template <class T>
struct SoftmaxBackward {
  const T* dy;
  const T* y;
  T* dx;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const int64_t base = i * cols;
    const float dot = lanes.sum(cols, [&](int64_t j) {
      return static_cast<float>(dy[base + j]) * static_cast<float>(y[base + j]);
    });
    lanes.for_each(cols, [&](int64_t j) {
      dx[base + j] = T(static_cast<float>(y[base + j]) * (static_cast<float>(dy[base + j]) - dot));
    });
  }
};

}  // namespace course::ops
