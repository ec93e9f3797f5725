// Row-broadcast bodies for fully connected layers, shared by the CPU and the GPU.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

// y[i, j] += bias[j] over a contiguous (rows, cols) matrix; bias is f32. A row kernel
// (row_lanes.h), so that the column is the loop's index, not a remainder per element: the CPU's
// loop over a row vectorises, and a warp's lanes read neighbouring elements.
template <class T>
struct AddRowBias {
  T* y;
  const float* bias;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    T* y_row = y + row * cols;
    lanes.for_each(cols, [&](int64_t j) { y_row[j] = T(static_cast<float>(y_row[j]) + bias[j]); });
  }
};

}  // namespace course::ops
