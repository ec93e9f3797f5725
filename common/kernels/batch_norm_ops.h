// Per-channel batch normalisation bodies, shared by the CPU and the GPU, for dense NCHW and
// NHWC tensors.
//
// Training: mean and variance over the M = N*H*W values of each channel (two passes, for
// accuracy), y = (x - mean) * invstd * gamma + beta, running statistics updated with the
// unbiased variance. Backward: dbeta = sum dy, dgamma = sum dy * xhat, and
// dx = gamma * invstd / M * (M * dy - dbeta - xhat * dgamma). With a fused ReLU the forward
// writes relu(y) and the backward's dy is first masked where y was not positive, y recomputed
// by the forward's own expression (normalised()), so the mask is the forward's bit for bit.
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

// y = (x - mean) * scale + shift with scale = invstd * gamma and shift = beta: the forward's
// value, and the backward's recomputation of it for the ReLU's mask.
COURSE_HD inline float normalised(float x, float mean, float scale, float shift) {
  return (x - mean) * scale + shift;
}

// v, or 0 where a fused ReLU's input y was not positive (as ReluMap and ReluGradMap: a NaN y
// gives 0). One select, no short-circuit: a branch on the data's sign would mispredict half the
// time.
COURSE_HD inline float relu_masked(float v, bool relu, float y) {
  return (!relu | (y > 0.0f)) ? v : 0.0f;
}

// dy and dy * xhat, dy masked by a fused ReLU when kRelu (a compile-time choice: a run-time flag
// in this loop cost the CPU's vectorisation or a branch on the data's sign, measured, up to
// five times batch norm's time).
template <class T, bool kRelu = false>
struct ChannelGradTerms {
  using Value = FloatPair;
  static constexpr int kSums = 2;
  const T* x;
  const T* dy;
  const float* mean;
  const float* invstd;
  const float* gamma;  // read with kRelu only
  const float* beta;
  COURSE_HD FloatPair value(int64_t at, int64_t ch) const {
    const float xv = static_cast<float>(x[at]);
    float g = static_cast<float>(dy[at]);
    if constexpr (kRelu) {
      g = relu_masked(g, true, normalised(xv, mean[ch], invstd[ch] * gamma[ch], beta[ch]));
    }
    return {g, g * (xv - mean[ch]) * invstd[ch]};
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

// Per channel: both running statistics taken from where cuDNN wrote them (cudnn_norms.h), in
// one launch rather than a copy each.
struct TakeRunningStats {
  const float* next_mean;
  const float* next_var;
  float* running_mean;
  float* running_var;
  COURSE_HD void operator()(int64_t ch) const {
    running_mean[ch] = next_mean[ch];
    running_var[ch] = next_var[ch];
  }
};

// Per channel: invstd from a (running) variance, for evaluation.
struct InvStdFromVariance {
  const float* var;
  float eps;
  float* invstd;
  COURSE_HD void operator()(int64_t ch) const { invstd[ch] = 1.0f / sqrtf(var[ch] + eps); }
};

// The map of the forward pass (channel_map_ops.h): y = (x - mean) * invstd * gamma + beta, and
// relu(y) with a fused ReLU (as ReluMap: a NaN gives 0).
struct Normalise {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  bool relu;
  struct Constants {
    float mean, scale, shift;
  };
  COURSE_HD Constants constants(int64_t ch) const {
    return {mean[ch], invstd[ch] * gamma[ch], beta[ch]};
  }
  template <class T>
  COURSE_HD T apply(T x, T, const Constants& k) const {
    const float y = normalised(static_cast<float>(x), k.mean, k.scale, k.shift);
    return T(relu_masked(y, relu, y));
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

// The map of the backward pass in training mode (channel_map_ops.h): dx from x and dy (the
// sums of the masked dy with a fused ReLU).
struct NormaliseGrad {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  const float* sum_dy;
  const float* sum_dy_xhat;
  float m;  // elements per channel of the statistics (over all ranks when synchronised)
  bool relu;
  struct Constants {
    float mean, invstd, gamma, scale, shift, sum_dy, sum_dy_xhat;
  };
  COURSE_HD Constants constants(int64_t ch) const {
    return {mean[ch], invstd[ch], gamma[ch],      invstd[ch] * gamma[ch],
            beta[ch], sum_dy[ch], sum_dy_xhat[ch]};
  }
  template <class T>
  COURSE_HD T apply(T x_value, T dy_value, const Constants& k) const {
    const float x = static_cast<float>(x_value);
    const float xhat = (x - k.mean) * k.invstd;
    const float g =
        relu_masked(static_cast<float>(dy_value), relu, normalised(x, k.mean, k.scale, k.shift));
    return T(k.gamma * k.invstd / m * (m * g - k.sum_dy - xhat * k.sum_dy_xhat));
  }
};

}  // namespace course::ops
