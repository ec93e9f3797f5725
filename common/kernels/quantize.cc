// Dispatch of the int8 inference kernels, with their argument checks.
#include "common/kernels/quantize.h"

#include "common/kernels/launch.h"
#include "common/kernels/quantize_ops.h"

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
