// Per-element bodies of int8 inference, shared by the CPU and the GPU: symmetric quantization of
// activations, a signed input split into two unsigned ones, the epilogue of an integer GEMM
// (per-channel scale, bias, ReLU), and the im2col that turns a channels-last i8 convolution into
// that GEMM.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"

namespace course::ops {

// q = clamp(round(x / scale), -127, 127), ties to even (rintf in the default rounding mode).
struct QuantizeSymmetric {
  const float* x;
  int8_t* q;
  float scale;

  COURSE_HD void operator()(int64_t i) const {
    const float level = fminf(fmaxf(rintf(x[i] / scale), -127.0f), 127.0f);
    q[i] = static_cast<int8_t>(level);
  }
};

// x = positive - negative, both u8 in [0, 128]: a signed input as two unsigned ones.
struct SplitSigned {
  const int8_t* x;
  uint8_t* positive;
  uint8_t* negative;

  COURSE_HD void operator()(int64_t i) const {
    const int v = x[i];
    positive[i] = static_cast<uint8_t>(v > 0 ? v : 0);
    negative[i] = static_cast<uint8_t>(v < 0 ? -v : 0);
  }
};

// out[r, o] = (acc[r, o] - minus[r, o]) * scales[o] + bias[o], then max(., 0) with relu (minus
// may be null: nothing subtracted); acc's and minus's rows are `acc_stride` apart (a GEMM may pad
// them), out is dense (rows, channels).
template <class Acc>
struct ScaleBiasActivation {
  const Acc* acc;
  const Acc* minus;
  int64_t acc_stride;
  const float* scales;
  const float* bias;
  float* out;
  int64_t channels;
  bool relu;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t r = i / channels, o = i % channels;
    const int64_t at = r * acc_stride + o;
    const Acc sum = minus ? acc[at] - minus[at] : acc[at];
    const float y = static_cast<float>(sum) * scales[o] + bias[o];
    out[i] = relu && y < 0.0f ? 0.0f : y;
  }
};

// Row r = (n, oh, ow) of the GEMM's input holds the receptive field of output pixel r of an
// (N, H, W, C) input, column (kh K + kw) C + c, zero outside the image and in the columns
// padded past K K C. For element i of the (rows, columns) result.
struct Im2colNhwc {
  const int8_t* x;
  int8_t* cols;
  int64_t channels, height, width, out_height, out_width, kernel, stride, padding, columns;

  COURSE_HD void operator()(int64_t i) const {
    const int64_t row = i / columns, col = i % columns;
    int8_t value = 0;
    if (col < kernel * kernel * channels) {
      const int64_t c = col % channels, kw = (col / channels) % kernel;
      const int64_t kh = col / (channels * kernel);
      const int64_t ow = row % out_width, oh = (row / out_width) % out_height;
      const int64_t n = row / (out_width * out_height);
      const int64_t h = oh * stride - padding + kh, w = ow * stride - padding + kw;
      if (h >= 0 && h < height && w >= 0 && w < width) {
        value = x[((n * height + h) * width + w) * channels + c];
      }
    }
    cols[i] = value;
  }
};

}  // namespace course::ops
