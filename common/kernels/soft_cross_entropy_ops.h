// Cross-entropy against soft targets (a distribution per row: MixUp's and CutMix's mixed labels),
// and its gradient, for CPU and GPU: loss = sum_c q_c (logsumexp(x) - x_c) = logsumexp(x) -
// sum_c q_c x_c for targets q summing to 1; the gradient of the batch-mean loss is
// (softmax(x) - q) / N.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/cross_entropy_ops.h"

namespace course::ops {

template <class T>
struct SoftTargetCrossEntropyRow {
  const T* logits;
  const float* targets;  // (N, C)
  float* probs;
  float* losses;
  int64_t classes;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* x = logits + row * classes;
    const float* q = targets + row * classes;
    const float log_sum_exp = softmax_row(lanes, x, probs + row * classes, classes);
    const FloatPair target = lanes.sum_pair(classes, [&](int64_t c) {
      return FloatPair{q[c] * static_cast<float>(x[c]), q[c]};
    });
    if (lanes.first()) losses[row] = target.second * log_sum_exp - target.first;
  }
};

// dlogits[i] = (probs[i] - targets[i]) * scale, element by element over the (N, C) matrix.
template <class T>
struct SoftTargetCrossEntropyBackward {
  const float* probs;
  const float* targets;
  T* dlogits;
  float scale;

  COURSE_HD void operator()(int64_t i) const { dlogits[i] = T((probs[i] - targets[i]) * scale); }
};

}  // namespace course::ops
