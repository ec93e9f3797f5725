// MixUp and CutMix of a batch with its flipped self (sample i with sample N-1-i, as timm does),
// and the mixed soft targets, for CPU and GPU. One kernel does both: sample i's pixels inside its
// box come from the partner (CutMix), the others are w_i x_i + (1 - w_i) x_partner (MixUp; w = 1
// leaves them as they are, exactly). A sample that is not mixed has w = 1 and an empty box.
#pragma once

#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/cross_entropy_ops.h"

namespace course::ops {

template <class T>
struct MixWithFlipped {
  const T* x;
  T* out;
  const float* weights;  // (N,)
  const int32_t* boxes;  // (N, 4): rows [y0, y1), columns [x0, x1)
  int64_t samples, channels, height, width;
  bool channels_last;

  COURSE_HD void operator()(int64_t index) const {
    const int64_t per_sample = channels * height * width;
    const int64_t i = index / per_sample, e = index % per_sample;
    const int64_t pixel = channels_last ? e / channels : e % (height * width);
    const int64_t row = pixel / width, column = pixel % width;
    const int32_t* box = boxes + 4 * i;
    const float own = static_cast<float>(x[index]);
    const float other = static_cast<float>(x[(samples - 1 - i) * per_sample + e]);
    const bool inside = row >= box[0] && row < box[1] && column >= box[2] && column < box[3];
    const float w = weights[i];
    out[index] = T(inside ? other : w * own + (1.0f - w) * other);
  }
};

// targets (N, K): lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), element by element.
struct MixedSoftTargets {
  const int64_t* labels;
  const float* lambdas;
  float* targets;
  int64_t samples, classes;
  float smoothing;

  COURSE_HD void operator()(int64_t index) const {
    const int64_t i = index / classes, c = index % classes;
    const float lambda = lambdas[i];
    const int64_t own = labels[i], partner = labels[samples - 1 - i];
    if (own < 0 || own >= classes || partner < 0 || partner >= classes) {
      targets[index] = std::numeric_limits<float>::quiet_NaN();  // the loss shows it
      return;
    }
    targets[index] = lambda * smoothed_target(c, own, classes, smoothing) +
                     (1.0f - lambda) * smoothed_target(c, partner, classes, smoothing);
  }
};

}  // namespace course::ops
