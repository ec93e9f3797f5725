// Per-channel batch normalisation bodies, shared by the CPU and the GPU, for dense NCHW and
// NHWC tensors.
//
// Training: mean and variance over the M = N*H*W values of each channel (two passes, for
// accuracy), y = (x - mean) * invstd * gamma + beta, running statistics updated with the
// unbiased variance. Backward: dbeta = sum dy, dgamma = sum dy * xhat, and
// dx = gamma * invstd / M * (M * dy - dbeta - xhat * dgamma).
//
// Channel sums are taken in two steps that both read memory in storage order: one partial sum
// per (sample, channel) (an NCHW plane in eight interleaved lanes), then per channel over the
// samples. Elementwise passes run per storage row: an (n, c) plane of H*W values in NCHW, a
// pixel of C values in NHWC.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

struct ChannelLoop {
  int64_t n, c, hw;
  bool channels_last;

  COURSE_HD int64_t count() const { return n * hw; }
  COURSE_HD int64_t rows() const { return channels_last ? n * hw : n * c; }
  COURSE_HD int64_t row_length() const { return channels_last ? c : hw; }

  // Sums f(storage index) per channel over one sample into out[0, C), reading in storage order
  // and keeping each running sum in a register where the layout allows (NCHW planes).
  template <class F>
  COURSE_HD void sum_sample(int64_t sample, float* out, F f) const {
    const int64_t base = sample * c * hw;
    if (channels_last) {
      for (int64_t ch = 0; ch < c; ++ch) out[ch] = 0.0f;
      for (int64_t k = 0; k < hw; ++k) {
        for (int64_t ch = 0; ch < c; ++ch) out[ch] += f(base + k * c + ch, ch);
      }
    } else {
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t plane = base + ch * hw;
        out[ch] = sum_in_lanes(hw, [&](int64_t k) { return f(plane + k, ch); });
      }
    }
  }

  // The sum of g(k) for k in [0, count) as kLanes interleaved partial sums combined pairwise
  // in a fixed order: independent additions the CPU overlaps and vectorises (one running sum
  // waits for each addition), with the same result on any number of threads.
  template <class G>
  COURSE_HD static float sum_in_lanes(int64_t count, G g) {
    constexpr int kLanes = 8;
    float lane[kLanes] = {};
    const int64_t whole = count - count % kLanes;
    for (int64_t k = 0; k < whole; k += kLanes) {
      for (int l = 0; l < kLanes; ++l) lane[l] += g(k + l);
    }
    for (int64_t k = whole; k < count; ++k) lane[k - whole] += g(k);
    for (int width = kLanes / 2; width > 0; width /= 2) {
      for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
    }
    return lane[0];
  }
};

// Per sample: partial[sample, ch] = sum of (x - center[ch])^k over the sample's values of ch,
// with k = 1 and no center, or k = 2 around the given centers.
template <class T>
struct ChannelPartialSums {
  const T* x;
  ChannelLoop loop;
  const float* center;  // null: plain sums
  float* partial;       // (N, C)
  COURSE_HD void operator()(int64_t sample) const {
    float* out = partial + sample * loop.c;
    if (center == nullptr) {
      loop.sum_sample(sample, out, [&](int64_t at, int64_t) { return static_cast<float>(x[at]); });
    } else {
      loop.sum_sample(sample, out, [&](int64_t at, int64_t ch) {
        const float d = static_cast<float>(x[at]) - center[ch];
        return d * d;
      });
    }
  }
};

// Per channel: total[ch] = sum over samples of partial[sample, ch].
struct SumOverSamples {
  const float* partial;
  int64_t samples, channels;
  float* total;
  COURSE_HD void operator()(int64_t ch) const {
    float sum = 0.0f;
    for (int64_t s = 0; s < samples; ++s) sum += partial[s * channels + ch];
    total[ch] = sum;
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

// Per storage row: y = (x - mean) * invstd * gamma + beta.
template <class T>
struct BatchNormApply {
  const T* x;
  T* y;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  COURSE_HD void operator()(int64_t row) const {
    const int64_t length = loop.row_length(), base = row * length;
    if (loop.channels_last) {
      for (int64_t ch = 0; ch < length; ++ch) {
        y[base + ch] = apply(x[base + ch], mean[ch], invstd[ch] * gamma[ch], beta[ch]);
      }
      return;
    }
    // An NCHW row is one channel's plane: its constants load once, and the loop vectorises.
    const int64_t ch = row % loop.c;
    const float m = mean[ch], scale = invstd[ch] * gamma[ch], shift = beta[ch];
    for (int64_t j = 0; j < length; ++j) y[base + j] = apply(x[base + j], m, scale, shift);
  }
  COURSE_HD static T apply(T x, float mean, float scale, float shift) {
    return T((static_cast<float>(x) - mean) * scale + shift);
  }
};

// Per sample: partial sums of dy and dy * xhat per channel, into (N, C) buffers.
template <class T>
struct BatchNormPartialGradSums {
  const T* x;
  const T* dy;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  float* partial_dy;
  float* partial_dy_xhat;
  COURSE_HD void operator()(int64_t sample) const {
    loop.sum_sample(sample, partial_dy + sample * loop.c,
                    [&](int64_t at, int64_t) { return static_cast<float>(dy[at]); });
    loop.sum_sample(sample, partial_dy_xhat + sample * loop.c, [&](int64_t at, int64_t ch) {
      return static_cast<float>(dy[at]) * (static_cast<float>(x[at]) - mean[ch]) * invstd[ch];
    });
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

// Per storage row: dx of batch normalisation in training mode.
template <class T>
struct BatchNormBackwardApply {
  const T* x;
  const T* dy;
  T* dx;
  ChannelLoop loop;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* sum_dy;
  const float* sum_dy_xhat;
  float m;  // elements per channel of the statistics (over all ranks when synchronised)
  COURSE_HD void operator()(int64_t row) const {
    const int64_t length = loop.row_length(), base = row * length;
    if (loop.channels_last) {
      for (int64_t ch = 0; ch < length; ++ch) {
        dx[base + ch] = apply(x[base + ch], dy[base + ch], channel_constants(ch));
      }
      return;
    }
    // An NCHW row is one channel's plane: its constants load once, and the loop vectorises.
    const Constants k = channel_constants(row % loop.c);
    for (int64_t j = 0; j < length; ++j) dx[base + j] = apply(x[base + j], dy[base + j], k);
  }
  struct Constants {
    float mean, invstd, gamma, sum_dy, sum_dy_xhat;
  };
  COURSE_HD Constants channel_constants(int64_t ch) const {
    return {mean[ch], invstd[ch], gamma[ch], sum_dy[ch], sum_dy_xhat[ch]};
  }
  COURSE_HD T apply(T x_value, T dy_value, const Constants& k) const {
    const float xhat = (static_cast<float>(x_value) - k.mean) * k.invstd;
    const float g = static_cast<float>(dy_value);
    return T(k.gamma * k.invstd / m * (m * g - k.sum_dy - xhat * k.sum_dy_xhat));
  }
};

}  // namespace course::ops
