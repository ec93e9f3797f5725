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
// pixels). The elementwise passes are row kernels over storage rows: an (n, c) plane of H*W
// values in NCHW, a pixel of C values in NHWC.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/row_lanes.h"

namespace course::ops {

struct ChannelLoop {
  int64_t n, c, hw;
  bool channels_last;

  COURSE_HD int64_t count() const { return n * hw; }
  COURSE_HD int64_t rows() const { return channels_last ? n * hw : n * c; }
  COURSE_HD int64_t row_length() const { return channels_last ? c : hw; }
};

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

// One element of channel ch: y = (x - mean) * invstd * gamma + beta (the row kernel's and, on a
// GPU, channel_packets_ops.h's map).
struct Normalise {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  template <class T>
  COURSE_HD T operator()(int64_t ch, T x, T) const {
    return apply(x, mean[ch], invstd[ch] * gamma[ch], beta[ch]);
  }
  template <class T>
  COURSE_HD static T apply(T x, float mean, float scale, float shift) {
    return T((static_cast<float>(x) - mean) * scale + shift);
  }
};

// Per storage row (a row kernel): y = Normalise(x).
template <class T>
struct BatchNormApply {
  const T* x;
  T* y;
  ChannelLoop loop;
  Normalise norm;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t length = loop.row_length(), base = row * length;
    if (loop.channels_last) {
      lanes.for_each(length, [&](int64_t ch) { y[base + ch] = norm(ch, x[base + ch], T()); });
      return;
    }
    // An NCHW row is one channel's plane: its constants load once, and the loop vectorises.
    const int64_t ch = row % loop.c;
    const float m = norm.mean[ch], scale = norm.invstd[ch] * norm.gamma[ch], shift = norm.beta[ch];
    lanes.for_each(
        length, [&](int64_t j) { y[base + j] = Normalise::apply(x[base + j], m, scale, shift); });
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

// dx of one element of channel ch in training mode (the row kernel's and, on a GPU,
// channel_packets_ops.h's map).
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
  template <class T>
  COURSE_HD T operator()(int64_t ch, T x_value, T dy_value) const {
    return apply(x_value, dy_value, constants(ch));
  }
};

// Per storage row (a row kernel): dx = NormaliseGrad(x, dy).
template <class T>
struct BatchNormBackwardApply {
  const T* x;
  const T* dy;
  T* dx;
  ChannelLoop loop;
  NormaliseGrad grad;
  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const int64_t length = loop.row_length(), base = row * length;
    if (loop.channels_last) {
      lanes.for_each(length,
                     [&](int64_t ch) { dx[base + ch] = grad(ch, x[base + ch], dy[base + ch]); });
      return;
    }
    // An NCHW row is one channel's plane: its constants load once, and the loop vectorises.
    const NormaliseGrad::Constants k = grad.constants(row % loop.c);
    lanes.for_each(length,
                   [&](int64_t j) { dx[base + j] = grad.apply(x[base + j], dy[base + j], k); });
  }
};

}  // namespace course::ops
