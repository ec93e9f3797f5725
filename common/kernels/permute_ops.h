// Permute body shared by the CPU and the GPU: output run i (row-major over the output's leading
// `dims` axes) reads the input at the offset its coordinates give through the input's strides,
// then copies `inner` contiguous elements (the last axis when it stays last, else 1).
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
  int64_t inner;
  int64_t out_shape[kMaxPermuteDims];
  int64_t in_strides[kMaxPermuteDims];  // x's stride along each of y's axes
  COURSE_HD void operator()(int64_t i) const {
    int64_t rest = i, offset = 0;
    for (int d = dims - 1; d >= 0; --d) {
      offset += (rest % out_shape[d]) * in_strides[d];
      rest /= out_shape[d];
    }
    for (int64_t k = 0; k < inner; ++k) y[i * inner + k] = x[offset + k];
  }
};

}  // namespace course::ops
