// Per-channel batch normalisation bodies, shared by the CPU and the GPU, for dense NCHW and
// NHWC tensors.
//
// Training: mean and variance over the M = N*H*W values of each channel (two passes, for
// accuracy), y = (x - mean) * invstd * gamma + beta, running statistics updated with the
// unbiased variance. Backward: dbeta = sum dy, dgamma = sum dy * xhat, and
// dx = gamma * invstd / M * (M * dy - dbeta - xhat * dgamma).
//
// Channel sums read memory in storage order with neighbouring GPU threads on neighbouring
// elements. NCHW: one partial sum per (sample, channel) plane, a row kernel (a warp per plane,
// row_lanes.h), then per channel over the samples (column_sums_ops.h's AddChunkSums). NHWC: the
// column sums of the (pixels, channels) matrix (column_sums.h's add_column_sums, in chunks of
// pixels). The elementwise passes are per-channel maps (channel_map_ops.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/channel_map_ops.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

// The summands of the channel sums, per storage index `at` of channel `ch`: Value is a float
// (one sum) or a FloatPair (two sums in one pass).
template <class T>
struct ChannelValues {  // x
  using Value = float;
  static constexpr int kSums = 1;
  const T* x;
  COURSE_HD float value(int64_t at, int64_t) const { return static_cast<float>(x[at]); }
};

template <class T>
struct ChannelSquares {  // (x - center)^2
  using Value = float;
  static constexpr int kSums = 1;
  const T* x;
  const float* center;
  COURSE_HD float value(int64_t at, int64_t ch) const {
    const float d = static_cast<float>(x[at]) - center[ch];
    return d * d;
  }
};

template <class T>
struct ChannelGradTerms {  // dy and dy * xhat
  using Value = FloatPair;
  static constexpr int kSums = 2;
  const T* x;
  const T* dy;
  const float* mean;
  const float* invstd;
  COURSE_HD FloatPair value(int64_t at, int64_t ch) const {
    const float g = static_cast<float>(dy[at]);
    return {g, g * (static_cast<float>(x[at]) - mean[ch]) * invstd[ch]};
  }
};

// Stores a Value's sums at partial[s * stride].
COURSE_HD inline void store_sums(float value, float* partial, int64_t) { partial[0] = value; }
COURSE_HD inline void store_sums(FloatPair value, float* partial, int64_t stride) {
  partial[0] = value.first;
  partial[stride] = value.second;
}

// NCHW, a row per (sample, channel) plane: partial[(sample, s, channel)] = the plane's sums.
template <class Terms>
struct PlaneSums {
  Terms terms;
  int64_t c, hw;
  float* partial;  // (N, kSums, C)
  template <class Lanes>
  COURSE_HD void operator()(int64_t plane, const Lanes& lanes) const {
    const int64_t sample = plane / c, ch = plane % c, base = plane * hw;
    const typename Terms::Value sums = lanes.fold(
        hw, typename Terms::Value{}, [&](int64_t k) { return terms.value(base + k, ch); }, Plus{});
    if (lanes.first()) store_sums(sums, partial + sample * Terms::kSums * c + ch, c);
  }
};

// NHWC, as column_sums_ops.h's Column: the pixels are rows, the channels columns.
template <class Terms>
struct PixelColumns {
  static constexpr int kSums = Terms::kSums;
  Terms terms;
  int64_t c;
  COURSE_HD void add(int64_t pixel, int64_t ch, float* acc) const {
    const typename Terms::Value v = terms.value(pixel * c + ch, ch);
    float sums[kSums];
    store_sums(v, sums, 1);
    for (int s = 0; s < kSums; ++s) acc[s] += sums[s];
  }
};

// Per channel: mean = sum / M (in place).
struct DivideBy {
  float* values;
  float divisor;
  COURSE_HD void operator()(int64_t ch) const { values[ch] /= divisor; }
};

// Per channel, from the sums of squared deviations: invstd, and the running statistics
// (when given) moved by `momentum` towards the batch mean and unbiased variance.
struct FinishBatchStats {
  const float* mean;
  const float* squares;
  int64_t count;
  float eps, momentum;
  float* invstd;
  float* running_mean;  // may be null
  float* running_var;
  COURSE_HD void operator()(int64_t ch) const {
    const float var = squares[ch] / static_cast<float>(count);
    invstd[ch] = 1.0f / sqrtf(var + eps);
    if (running_mean != nullptr) {
      const float unbiased = count > 1 ? squares[ch] / static_cast<float>(count - 1) : var;
      running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * mean[ch];
      running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unbiased;
    }
  }
};

// Per channel: invstd from a (running) variance, for evaluation.
struct InvStdFromVariance {
  const float* var;
  float eps;
  float* invstd;
  COURSE_HD void operator()(int64_t ch) const { invstd[ch] = 1.0f / sqrtf(var[ch] + eps); }
};

// The map of the forward pass (channel_map_ops.h): y = (x - mean) * invstd * gamma + beta.
struct Normalise {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  struct Constants {
    float mean, scale, shift;
  };
  COURSE_HD Constants constants(int64_t ch) const {
    return {mean[ch], invstd[ch] * gamma[ch], beta[ch]};
  }
  template <class T>
  COURSE_HD T apply(T x, T, const Constants& k) const {
    return T((static_cast<float>(x) - k.mean) * k.scale + k.shift);
  }
};

// Per channel: parameter gradients accumulate the channel sums.
struct AccumulateParamGrads {
  const float* sum_dy;
  const float* sum_dy_xhat;
  float* dgamma;
  float* dbeta;
  COURSE_HD void operator()(int64_t ch) const {
    dbeta[ch] += sum_dy[ch];
    dgamma[ch] += sum_dy_xhat[ch];
  }
};

// The map of the backward pass in training mode (channel_map_ops.h): dx from x and dy.
struct NormaliseGrad {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* sum_dy;
  const float* sum_dy_xhat;
  float m;  // elements per channel of the statistics (over all ranks when synchronised)
  struct Constants {
    float mean, invstd, gamma, sum_dy, sum_dy_xhat;
  };
  COURSE_HD Constants constants(int64_t ch) const {
    return {mean[ch], invstd[ch], gamma[ch], sum_dy[ch], sum_dy_xhat[ch]};
  }
  template <class T>
  COURSE_HD T apply(T x_value, T dy_value, const Constants& k) const {
    const float xhat = (static_cast<float>(x_value) - k.mean) * k.invstd;
    const float g = static_cast<float>(dy_value);
    return T(k.gamma * k.invstd / m * (m * g - k.sum_dy - xhat * k.sum_dy_xhat));
  }
};

}  // namespace course::ops
