// LayerNorm and RMSNorm launches: one path for both, RMSNorm's without the mean and the bias;
// LayerNorm on a GPU through cuDNN's graph where it has an engine (cudnn_norms.h).
#include "common/kernels/layer_norm.h"

#include "common/kernels/column_sums.h"
#include "common/kernels/cudnn_norms.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/layer_norm_ops.h"

namespace course {

namespace {

// The parameters (weight, and LayerNorm's bias) or their gradients.
void check_parameters(const Tensor& x, std::initializer_list<const Tensor*> parameters) {
  COURSE_CHECK(x.dim() >= 1 && x.memory_format() == MemoryFormat::kContiguous,
               "normalisation needs a contiguous (..., C) input, got ", x.str());
  const int64_t c = x.size(-1);
  for (const Tensor* p : parameters) {
    COURSE_CHECK(
        p->dtype() == DType::kF32 && p->dim() == 1 && p->size(0) == c && p->device() == x.device(),
        "normalisation parameters must be (", c, ",) f32 on ", x.device().str(), ", got ",
        p->str());
  }
}

template <bool kCentered>
Tensor normalise_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                         LayerNormSaved& saved) {
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (kCentered) saved.mean = Tensor::empty({rows}, DType::kF32, x.device());
  saved.rstd = Tensor::empty({rows}, DType::kF32, x.device());
  visit_floating(x.dtype(), "normalisation forward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::NormForward<T, kCentered>{x.data_as<T>(), weight.data_as<float>(),
                                                bias.data_or_null<float>(), y.data_as<T>(),
                                                saved.mean.data_or_null<float>(),
                                                saved.rstd.data_as<float>(), cols, eps});
  });
  return y;
}

template <bool kCentered>
Tensor normalise_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                          const LayerNormSaved& saved, Tensor& weight_grad, Tensor* bias_grad) {
  check_same(dy, x, "normalisation backward");
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  const float* mean = saved.mean.data_or_null<float>();
  visit_floating(x.dtype(), "normalisation backward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::NormBackwardInput<T, kCentered>{
                     dy.data_as<T>(), x.data_as<T>(), weight.data_as<float>(), mean,
                     saved.rstd.data_as<float>(), dx.data_as<T>(), cols});
    const ops::NormParamTerms<T, kCentered> terms{dy.data_as<T>(), x.data_as<T>(), mean,
                                                  saved.rstd.data_as<float>(), cols};
    if constexpr (kCentered) {
      add_column_sums(x.device(), terms, rows, cols,
                      {weight_grad.data_as<float>(), bias_grad->data_as<float>()});
    } else {
      add_column_sums(x.device(), terms, rows, cols, {weight_grad.data_as<float>()});
    }
  });
  return dx;
}

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          LayerNormSaved& saved) {
  check_parameters(x, {&weight, &bias});
  Tensor y;
  if (cudnn_layer_norm_forward(x, weight, bias, eps, y, saved.mean, saved.rstd)) return y;
  return normalise_forward<true>(x, weight, bias, eps, saved);
}

Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const LayerNormSaved& saved, Tensor& weight_grad, Tensor& bias_grad) {
  check_parameters(x, {&weight_grad, &bias_grad});
  check_same(dy, x, "normalisation backward");
  Tensor dx, dweight, dbias;
  if (cudnn_layer_norm_backward(dy, x, weight, saved.mean, saved.rstd, dx, dweight, dbias)) {
    axpy_(1.0f, dweight, weight_grad);
    axpy_(1.0f, dbias, bias_grad);
    return dx;
  }
  return normalise_backward<true>(dy, x, weight, saved, weight_grad, &bias_grad);
}

Tensor rms_norm_forward(const Tensor& x, const Tensor& weight, float eps, LayerNormSaved& saved) {
  check_parameters(x, {&weight});
  return normalise_forward<false>(x, weight, Tensor(), eps, saved);
}

Tensor rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const LayerNormSaved& saved, Tensor& weight_grad) {
  check_parameters(x, {&weight_grad});
  return normalise_backward<false>(dy, x, weight, saved, weight_grad, nullptr);
}

}  // namespace course
