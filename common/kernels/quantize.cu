// Int8 inference: symmetric quantization of activations, a signed input split into two unsigned
// ones, the epilogue of an integer GEMM (per-channel scale, bias, ReLU), and the im2col that turns
// a channels-last i8 convolution into that GEMM. The bodies (one for the CPU and the GPU), their
// argument checks and dispatch, and their GPU instantiations.
#include <cmath>
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/quantize.h"

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

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

Tensor quantize_symmetric(const Tensor& x, float scale) {
  COURSE_CHECK(x.dtype() == DType::kF32, "quantize_symmetric takes f32, got ", x.str());
  COURSE_CHECK(scale > 0 && std::isfinite(scale), "a quantization scale must be positive, got ",
               scale);
  Tensor q = Tensor::empty(x.shape(), DType::kI8, x.device(), x.memory_format());
  for_each_index(x.device(), x.numel(),
                 ops::QuantizeSymmetric{x.data_as<float>(), q.data_as<int8_t>(), scale});
  return q;
}

SignedSplit split_signed(const Tensor& x) {
  COURSE_CHECK(x.dtype() == DType::kI8, "split_signed takes i8, got ", x.str());
  SignedSplit split{Tensor::empty(x.shape(), DType::kU8, x.device(), x.memory_format()),
                    Tensor::empty(x.shape(), DType::kU8, x.device(), x.memory_format())};
  for_each_index(x.device(), x.numel(),
                 ops::SplitSigned{x.data_as<int8_t>(), split.positive.data_as<uint8_t>(),
                                  split.negative.data_as<uint8_t>()});
  return split;
}

Tensor scale_bias_activation(const Tensor& acc, int64_t channels, const Tensor& scales,
                             const Tensor& bias, bool relu, const Tensor& minus) {
  COURSE_CHECK(acc.dim() == 2 && acc.size(1) >= channels && channels > 0,
               "scale_bias_activation: acc must be (rows, >= ", channels, "), got ", acc.str());
  for (const Tensor* t : {&scales, &bias}) {
    COURSE_CHECK(
        t->dtype() == DType::kF32 && t->shape() == Shape{channels} && t->device() == acc.device(),
        "scale_bias_activation: scales and bias must be f32 (", channels, ",) on ",
        acc.device().str(), ", got ", t->str());
  }
  COURSE_CHECK(!minus.defined() || (minus.shape() == acc.shape() && minus.dtype() == acc.dtype() &&
                                    minus.device() == acc.device()),
               "scale_bias_activation: minus must be like acc ", acc.str(), ", got ", minus.str());
  Tensor out = Tensor::empty({acc.size(0), channels}, DType::kF32, acc.device());
  const auto run = [&]<class Acc>() {
    for_each_index(
        acc.device(), out.numel(),
        ops::ScaleBiasActivation<Acc>{acc.data_as<Acc>(), minus.data_or_null<Acc>(), acc.size(1),
                                      scales.data_as<float>(), bias.data_as<float>(),
                                      out.data_as<float>(), channels, relu});
  };
  if (acc.dtype() == DType::kI32) {
    run.operator()<int32_t>();
  } else {
    COURSE_CHECK(acc.dtype() == DType::kF32, "scale_bias_activation takes i32 or f32, got ",
                 acc.str());
    run.operator()<float>();
  }
  return out;
}

Tensor im2col_nhwc(const Tensor& x, int64_t kernel, Conv2dShape conv, int64_t columns) {
  COURSE_CHECK(
      x.dim() == 4 && x.dtype() == DType::kI8 && x.memory_format() == MemoryFormat::kChannelsLast,
      "im2col_nhwc takes an i8 channels-last (N, C, H, W), got ", x.str());
  const int64_t c = x.size(1);
  COURSE_CHECK(columns >= kernel * kernel * c, "im2col_nhwc: ", columns, " columns for a ", kernel,
               "x", kernel, " kernel over ", c, " channels");
  const Shape y = conv2d_output_shape(x.shape(), {1, c, kernel, kernel}, conv);
  Tensor cols = Tensor::empty({y[0] * y[2] * y[3], columns}, DType::kI8, x.device());
  for_each_index(
      x.device(), cols.numel(),
      ops::Im2colNhwc{x.data_as<int8_t>(), cols.data_as<int8_t>(), c, x.size(2), x.size(3), y[2],
                      y[3], kernel, conv.stride, conv.padding, columns});
  return cols;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH(course::ops::QuantizeSymmetric)
COURSE_INSTANTIATE_FOR_EACH(course::ops::SplitSigned)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ScaleBiasActivation<int32_t>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::ScaleBiasActivation<float>)
COURSE_INSTANTIATE_FOR_EACH(course::ops::Im2colNhwc)

}  // namespace course
