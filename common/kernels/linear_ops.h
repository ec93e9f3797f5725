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

}  // namespace course::ops
