// Reducers (for reduce_index) and per-row reductions, shared by the CPU and the GPU.
#pragma once

#include <cstdint>
#include <limits>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <class T>
struct SumReducer {
  using Acc = float;
  const T* x;
  COURSE_HD Acc identity() const { return 0.0f; }
  COURSE_HD Acc load(int64_t i) const { return static_cast<float>(x[i]); }
  COURSE_HD Acc combine(Acc a, Acc b) const { return a + b; }
};

// The largest element; a NaN anywhere makes the result NaN.
template <class T>
struct MaxReducer {
  using Acc = float;
  const T* x;
  COURSE_HD Acc identity() const { return kNegInf; }
  COURSE_HD Acc load(int64_t i) const { return static_cast<float>(x[i]); }
  COURSE_HD Acc combine(Acc a, Acc b) const { return (a != a || a > b) ? a : b; }
};

struct ArgMaxAcc {
  float value;
  int64_t index;  // -1: nothing seen yet
};

// Index of the largest element, the first one on ties.
template <class T>
struct ArgMaxReducer {
  using Acc = ArgMaxAcc;
  const T* x;
  COURSE_HD Acc identity() const { return {kNegInf, -1}; }
  COURSE_HD Acc load(int64_t i) const { return {static_cast<float>(x[i]), i}; }
  COURSE_HD Acc combine(Acc a, Acc b) const {
    if (b.index < 0) return a;
    if (a.index < 0 || b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
    return a;
  }
};

// Counts the elements that are NaN or infinite.
template <class T>
struct NonFiniteCount {
  using Acc = int64_t;
  const T* x;
  COURSE_HD Acc identity() const { return 0; }
  COURSE_HD Acc load(int64_t i) const {
    const float v = static_cast<float>(x[i]);
    return (v != v || v - v != 0.0f) ? 1 : 0;  // NaN, or inf (inf - inf is NaN)
  }
  COURSE_HD Acc combine(Acc a, Acc b) const { return a + b; }
};

// The index of the first largest of a row's `cols` values.
template <class T>
COURSE_HD int64_t first_argmax(const T* row, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c) {
    if (static_cast<float>(row[c]) > static_cast<float>(row[best])) best = c;
  }
  return best;
}

// out[row] = argmax of row `row` of a (rows, cols) matrix.
template <class T>
struct ArgMaxRows {
  const T* x;
  int64_t cols;
  int64_t* out;
  COURSE_HD void operator()(int64_t row) const { out[row] = first_argmax(x + row * cols, cols); }
};

// flags[row] = 1 when row's first largest logit is at its label, else 0.
template <class T>
struct CorrectRowFlag {
  const T* x;
  int64_t cols;
  const int64_t* labels;
  float* flags;
  COURSE_HD void operator()(int64_t row) const {
    flags[row] = first_argmax(x + row * cols, cols) == labels[row] ? 1.0f : 0.0f;
  }
};

}  // namespace course::ops
