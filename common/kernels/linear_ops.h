// Row-broadcast bodies for fully connected layers, shared by the CPU and the GPU.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// y[i, j] += bias[j] over a contiguous (rows, cols) matrix; bias is f32.
template <class T>
struct AddRowBias {
  T* y;
  const float* bias;
  int64_t cols;
  COURSE_HD void operator()(int64_t i) const {
    y[i] = T(static_cast<float>(y[i]) + bias[i % cols]);
  }
};

// Per column j: sums[j] += sum over rows of x[:, j] (f32 accumulation).
template <class T>
struct AddColumnSums {
  const T* x;
  float* sums;
  int64_t rows, cols;
  COURSE_HD void operator()(int64_t j) const {
    float total = 0.0f;
    for (int64_t r = 0; r < rows; ++r) total += static_cast<float>(x[r * cols + j]);
    sums[j] += total;
  }
};

}  // namespace course::ops
