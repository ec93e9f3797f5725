// Softmax bodies over the last dimension of a contiguous (rows, cols) tensor, shared by the CPU
// and the GPU as row kernels (row_lanes.h), computed in f32 whatever the dtype.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/exp_poly.h"

namespace course::ops {

// p = softmax(x) over `count` elements, from their maximum, for a row kernel's lanes; returns
// log(sum(exp(x))). p may be x itself: each lane writes only elements it has read.
template <class T, class P, class Lanes>
COURSE_HD inline float softmax_row(const Lanes& lanes, const T* x, P* p, int64_t count) {
  const auto value = [x](int64_t c) { return static_cast<float>(x[c]); };
  const float top = lanes.max(count, value);
  const float total = lanes.sum(count, [&](int64_t c) { return exp_poly(value(c) - top); });
  lanes.for_each(count, [&](int64_t c) { p[c] = P(exp_poly(value(c) - top) / total); });
  return top + logf(total);
}

// Row i: y = exp(x - max) / sum(exp(x - max)).
template <class T>
struct SoftmaxForward {
  const T* x;
  T* y;
  int64_t cols;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    softmax_row(lanes, x + i * cols, y + i * cols, cols);
  }
};

// Row i: dx = y (dy - sum_j dy_j y_j). With `dots`, the row's sum is dots[i], given: a block
// of a longer softmax (blockwise attention, attention_heads.h), whose sum spans every block.
template <class T>
struct SoftmaxBackward {
  const T* dy;
  const T* y;
  T* dx;
  int64_t cols;
  const float* dots = nullptr;
  template <class Lanes>
  COURSE_HD void operator()(int64_t i, const Lanes& lanes) const {
    const int64_t base = i * cols;
    const float dot = dots ? dots[i] : lanes.sum(cols, [&](int64_t j) {
      return static_cast<float>(dy[base + j]) * static_cast<float>(y[base + j]);
    });
    lanes.for_each(cols, [&](int64_t j) {
      dx[base + j] = T(static_cast<float>(y[base + j]) * (static_cast<float>(dy[base + j]) - dot));
    });
  }
};

}  // namespace course::ops
