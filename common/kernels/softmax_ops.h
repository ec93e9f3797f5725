// Softmax bodies over the last dimension of a contiguous (rows, cols) tensor, shared by the CPU
// and the GPU, computed in f32 whatever the dtype.
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
  COURSE_HD void operator()(int64_t i) const {
    const T* row = x + i * cols;
    float m = static_cast<float>(row[0]);
    for (int64_t j = 1; j < cols; ++j) m = fmaxf(m, static_cast<float>(row[j]));
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += expf(static_cast<float>(row[j]) - m);
    for (int64_t j = 0; j < cols; ++j) {
      y[i * cols + j] = T(expf(static_cast<float>(row[j]) - m) / sum);
    }
  }
};

// Row i: dx = y (dy - sum_j dy_j y_j).
template <class T>
struct SoftmaxBackward {
  const T* dy;
  const T* y;
  T* dx;
  int64_t cols;
  COURSE_HD void operator()(int64_t i) const {
    const int64_t base = i * cols;
    float dot = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      dot += static_cast<float>(dy[base + j]) * static_cast<float>(y[base + j]);
    }
    for (int64_t j = 0; j < cols; ++j) {
      dx[base + j] = T(static_cast<float>(y[base + j]) * (static_cast<float>(dy[base + j]) - dot));
    }
  }
};

}  // namespace course::ops
