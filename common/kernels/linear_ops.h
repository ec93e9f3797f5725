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

// The summands of a bias gradient: the (rows, cols) matrix's elements, per column
// (column_sums_ops.h adds them up, in f32).
template <class T>
struct ColumnOf {
  static constexpr int kSums = 1;
  const T* x;
  int64_t cols;
  COURSE_HD void add(int64_t row, int64_t col, float* acc) const {
    acc[0] += static_cast<float>(x[row * cols + col]);
  }
};

}  // namespace course::ops
