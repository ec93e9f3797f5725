// The lanes of a row kernel (launch.h's for_each_row): the one shape of the hand-written kernels
// that reduce along rows (softmax, cross-entropy, LayerNorm, batch norm's planes, a loss mean).
//
// kRowLanes lanes share each row, lane l taking elements l, l + kRowLanes, l + 2 kRowLanes, ...,
// and their partial results meet in one fixed butterfly (widths 16, 8, 4, 2, 1). On the GPU the
// lanes are one warp's threads: neighbouring threads read neighbouring elements, and the
// butterfly is a shuffle (row_lanes_cuda.cuh). On the CPU one thread plays every lane: 32
// independent accumulators, which it vectorises. Both devices add in the same order, so a row's
// sums depend on neither the device nor the number of threads.
//
// A row kernel is a functor with
//   template <class Lanes> COURSE_HD void operator()(int64_t row, const Lanes& lanes) const;
// that reduces with lanes.sum / lanes.max / lanes.sum_pair, writes elements with
// lanes.for_each, and writes a row's own scalars only where lanes.first(). Every lane of a row
// must make the same sequence of reducing calls (a warp's shuffles need all of its threads).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/core/host_device.h"

namespace course::ops {

inline constexpr int kRowLanes = 32;  // a warp

struct Plus {
  template <class V>
  COURSE_HD V operator()(V a, V b) const {
    return a + b;
  }
};

// fmaxf's rule (a NaN loses to a number) as comparisons: the CPU vectorises them, where fmaxf is
// a call into libm; on the GPU they are a few instructions either way.
struct Maximum {
  COURSE_HD float operator()(float a, float b) const { return a > b || b != b ? a : b; }
};

// Two sums taken in one pass over a row.
struct FloatPair {
  float first = 0.0f, second = 0.0f;
  COURSE_HD FloatPair operator+(FloatPair o) const { return {first + o.first, second + o.second}; }
};

// The reductions every kind of lanes offers, in terms of its fold(count, identity, f, op).
template <class Lanes>
struct RowReductions {
  template <class F>
  COURSE_HD float sum(int64_t count, F f) const {
    return lanes().fold(count, 0.0f, f, Plus{});
  }
  template <class F>
  COURSE_HD float max(int64_t count, F f) const {
    return lanes().fold(count, -INFINITY, f, Maximum{});
  }
  // f returns a FloatPair: both sums in one pass.
  template <class F>
  COURSE_HD FloatPair sum_pair(int64_t count, F f) const {
    return lanes().fold(count, FloatPair{}, f, Plus{});
  }

 private:
  COURSE_HD const Lanes& lanes() const { return static_cast<const Lanes&>(*this); }
};

// The CPU's lanes: one thread folds all of them.
struct HostRowLanes : RowReductions<HostRowLanes> {
  template <class V, class F, class Op>
  V fold(int64_t count, V identity, F f, Op op) const {
    if constexpr (std::is_same_v<V, FloatPair>) {
      // Each sum on its own, which the CPU vectorises where it would not interleaved pairs: the
      // same additions in the same order.
      return {fold_lanes(
                  count, identity.first, [&](int64_t j) { return f(j).first; }, op),
              fold_lanes(
                  count, identity.second, [&](int64_t j) { return f(j).second; }, op)};
    } else {
      return fold_lanes(count, identity, f, op);
    }
  }
  template <class F>
  void for_each(int64_t count, F f) const {
    for (int64_t j = 0; j < count; ++j) f(j);
  }
  bool first() const { return true; }

 private:
  template <class V, class F, class Op>
  static V fold_lanes(int64_t count, V identity, F f, Op op) {
    // Unrolled, so that every lane's index is a constant and the lanes live in registers.
    V lane[kRowLanes];
    COURSE_UNROLL
    for (int l = 0; l < kRowLanes; ++l) lane[l] = identity;
    const int64_t whole = count - count % kRowLanes;
    for (int64_t j = 0; j < whole; j += kRowLanes) {
      COURSE_UNROLL
      for (int l = 0; l < kRowLanes; ++l) lane[l] = op(lane[l], f(j + l));
    }
    COURSE_UNROLL
    for (int l = 0; l < kRowLanes; ++l) {
      if (whole + l < count) lane[l] = op(lane[l], f(whole + l));
    }
    COURSE_UNROLL
    for (int width = kRowLanes / 2; width > 0; width /= 2) {
      COURSE_UNROLL
      for (int l = 0; l < width; ++l) lane[l] = op(lane[l], lane[l + width]);
    }
    return lane[0];
  }
};

}  // namespace course::ops
