// Per-row softmax + cross-entropy with label smoothing, and its gradient, for CPU and GPU.
//
// With C classes and smoothing e, the target of a sample of class y is
//   q_c = 1 - e + e/C for c = y, e/C otherwise,
// its loss is sum_c q_c * (logsumexp(x) - x_c) = logsumexp(x) - sum_c q_c x_c, and the
// gradient of the batch-mean loss is (softmax(x) - q) / N.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "common/core/host_device.h"
#include "common/kernels/reduce_ops.h"
#include "common/kernels/row_lanes.h"
#include "common/kernels/softmax_ops.h"

namespace course::ops {

COURSE_HD inline float smoothed_target(int64_t c, int64_t label, int64_t classes, float smoothing) {
  const float off = smoothing / static_cast<float>(classes);
  return c == label ? 1.0f - smoothing + off : off;
}

// For row `row` of the (N, C) logits: probs[row, :] = softmax, losses[row] = smoothed CE (NaN
// for a label outside the classes).
template <class T>
struct SoftmaxCrossEntropyRow {
  const T* logits;
  const int64_t* labels;
  float* probs;
  float* losses;
  int64_t classes;
  float smoothing;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* x = logits + row * classes;
    const int64_t label = labels[row];
    const float log_sum_exp = softmax_row(lanes, x, probs + row * classes, classes);
    const float target_dot = lanes.sum(classes, [&](int64_t c) {
      return smoothed_target(c, label, classes, smoothing) * static_cast<float>(x[c]);
    });
    const bool known = label >= 0 && label < classes;
    if (lanes.first()) {
      losses[row] = known ? log_sum_exp - target_dot : std::numeric_limits<float>::quiet_NaN();
    }
  }
};

// dlogits[i] = (probs[i] - q[i]) * scale, element by element over the (N, C) matrix.
template <class T>
struct CrossEntropyBackward {
  const float* probs;
  const int64_t* labels;
  T* dlogits;
  int64_t classes;
  float smoothing;
  float scale;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t row = i / classes;
    const float q = smoothed_target(i % classes, labels[row], classes, smoothing);
    dlogits[i] = T((probs[i] - q) * scale);
  }
};

// The mean of n values (a batch's losses) as the one row of a row kernel: the loss stays on
// the device, where a graph can capture it, and the CPU and the GPU add in the same order.
struct MeanOfRow {
  const float* values;
  int64_t n;
  float* mean;
  template <class Lanes>
  COURSE_HD void operator()(int64_t, const Lanes& lanes) const {
    const float sum = lanes.sum(n, [this](int64_t i) { return values[i]; });
    if (lanes.first()) *mean = n > 0 ? sum / static_cast<float>(n) : 0.0f;
  }
};

// Counts labels outside [0, classes), so bad labels are reported instead of read out of bounds.
struct LabelsOutOfRange {
  using Acc = int64_t;
  const int64_t* labels;
  int64_t classes;
  COURSE_HD Acc identity() const { return 0; }
  COURSE_HD Acc load(int64_t i) const { return labels[i] < 0 || labels[i] >= classes ? 1 : 0; }
  COURSE_HD Acc combine(Acc a, Acc b) const { return a + b; }
};

}  // namespace course::ops
