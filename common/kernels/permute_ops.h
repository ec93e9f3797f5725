// Permute body shared by the CPU and the GPU: output element i (row-major in the output's
// shape) reads the input at the offset its coordinates give through the input's strides.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr int kMaxPermuteDims = 6;

template <class T>
struct Permute {
  const T* x;
  T* y;
  int dims;
  int64_t out_shape[kMaxPermuteDims];
  int64_t in_strides[kMaxPermuteDims];  // x's stride along each of y's axes
  COURSE_HD void operator()(int64_t i) const {
    int64_t rest = i, offset = 0;
    for (int d = dims - 1; d >= 0; --d) {
      offset += (rest % out_shape[d]) * in_strides[d];
      rest /= out_shape[d];
    }
    y[i] = x[offset];
  }
};

}  // namespace course::ops
