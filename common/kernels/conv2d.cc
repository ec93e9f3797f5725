// Convolution: shape checks and dispatch to oneDNN (CPU; one sgemm for the weight gradient of a
// small output plane) or cuDNN (GPU).
#include "common/kernels/conv2d.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/multiply_adds.h"

namespace course {

Shape conv2d_output_shape(const Shape& x, const Shape& w, Conv2dShape conv) {
  COURSE_CHECK(x.size() == 4 && w.size() == 4 && w[2] == w[3], "conv2d needs (N, C, H, W) input ",
               "and (O, C, K, K) weights, got ", shape_str(x), " and ", shape_str(w));
  COURSE_CHECK(conv.stride > 0 && conv.padding >= 0 && conv.groups > 0, "conv2d: bad stride ",
               conv.stride, ", padding ", conv.padding, " or groups ", conv.groups);
  COURSE_CHECK(x[1] == w[1] * conv.groups && w[0] % conv.groups == 0, "conv2d: input has ", x[1],
               " channels, weights ", shape_str(w), " in ", conv.groups, " groups expect ",
               w[1] * conv.groups);
  const int64_t k = w[2];
  COURSE_CHECK(x[2] + 2 * conv.padding >= k && x[3] + 2 * conv.padding >= k, "conv2d: a ", x[2],
               "x", x[3], " input is smaller than the ", k, "x", k,
               " kernel (the image is too small for the network)");
  return {x[0], w[0], (x[2] + 2 * conv.padding - k) / conv.stride + 1,
          (x[3] + 2 * conv.padding - k) / conv.stride + 1};
}

namespace {

void check_operands(const Tensor& a, const Tensor& w) {
  COURSE_CHECK(a.dtype() == w.dtype() && is_floating(a.dtype()), "conv2d dtypes: ", a.str(),
               " and ", w.str());
  COURSE_CHECK(a.device() == w.device(), "conv2d devices: ", a.str(), " and ", w.str());
  COURSE_CHECK(
      w.memory_format() == MemoryFormat::kContiguous || w.memory_format() == a.memory_format(),
      "conv2d weights must be contiguous or in the activations' memory format, got ", w.str(),
      " for ", a.str());
}

// Runs a CPU back end in f32 for f16/bf16 operands and rounds the result back.
template <class Op>
void in_f32_on_cpu(const Tensor& a, const Tensor& b, Tensor& out, bool accumulate, Op op) {
  if (a.dtype() == DType::kF32) {
    op(a, b, out);
    return;
  }
  Tensor out32 = accumulate
                     ? cast(out, DType::kF32)
                     : Tensor::empty(out.shape(), DType::kF32, out.device(), out.memory_format());
  op(cast(a, DType::kF32), cast(b, DType::kF32), out32);
  copy_(out, cast(out32, out.dtype()));
}

}  // namespace

MemoryFormat conv2d_weight_format(const Tensor& x) {
  return x.device().is_accelerator() ? x.memory_format() : MemoryFormat::kContiguous;
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, Conv2dShape conv) {
  check_operands(x, w);
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), conv), x.dtype(), x.device(),
                           x.memory_format());
  MultiplyAddCount::add(static_cast<double>(y.numel()) * w.size(1) * w.size(2) * w.size(3));
  if (x.device().is_cuda()) {
    detail::cudnn_conv2d_forward(x, w, y, conv);
  } else {
    in_f32_on_cpu(x, w, y, false, [&](const Tensor& a, const Tensor& b, Tensor& out) {
      detail::onednn_conv2d_forward(a, b, out, conv);
    });
  }
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& x, Conv2dShape conv) {
  check_operands(dy, w);
  COURSE_CHECK(dy.shape() == conv2d_output_shape(x.shape(), w.shape(), conv),
               "conv2d backward: dy ", dy.str(), " does not match the output of ", x.str());
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.memory_format());
  if (x.device().is_cuda()) {
    detail::cudnn_conv2d_backward_data(dy, w, dx, conv);
  } else {
    in_f32_on_cpu(dy, w, dx, false, [&](const Tensor& a, const Tensor& b, Tensor& out) {
      detail::onednn_conv2d_backward_data(a, b, out, conv);
    });
  }
  return dx;
}

void conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw, Conv2dShape conv) {
  const bool mixed = dw.dtype() == DType::kF32 && is_floating(x.dtype()) && x.dtype() != dw.dtype();
  if (mixed) {
    COURSE_CHECK(x.device() == dw.device() && dw.memory_format() == MemoryFormat::kContiguous,
                 "conv2d weight gradient ", dw.str(), " for ", x.str());
  } else {
    check_operands(x, dw);
  }
  COURSE_CHECK(dy.shape() == conv2d_output_shape(x.shape(), dw.shape(), conv),
               "conv2d backward: dy ", dy.str(), " does not match the output of ", x.str());
  if (x.device().is_cuda()) {
    detail::cudnn_conv2d_backward_weights_add(dy, x, dw, conv);
    return;
  }
  if (mixed) {  // the gradient rounded to x's dtype, as cuDNN's, then added in f32
    Tensor low = zeros(dw.shape(), x.dtype(), x.device());
    conv2d_backward_weights_add(dy, x, low, conv);
    accumulate_f32_(dw, low);
    return;
  }
  in_f32_on_cpu(dy, x, dw, true, [&](const Tensor& a, const Tensor& b, Tensor& out) {
    if (detail::gemm_weight_gradient_pays(a.shape(), conv)) {
      detail::gemm_conv2d_backward_weights_add(a, b, out, conv);
      return;
    }
    Tensor fresh = Tensor::empty(out.shape(), DType::kF32, out.device());
    detail::onednn_conv2d_backward_weights(a, b, fresh, conv);
    axpy_(1.0f, fresh, out);
  });
}

}  // namespace course
