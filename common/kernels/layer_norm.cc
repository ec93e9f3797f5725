// LayerNorm launches.
#include "common/kernels/layer_norm.h"

#include "common/kernels/column_sums.h"
#include "common/kernels/launch.h"
#include "common/kernels/layer_norm_ops.h"

namespace course {

namespace {

void check_parameters(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  COURSE_CHECK(x.dim() >= 1 && x.memory_format() == MemoryFormat::kContiguous,
               "layer norm needs a contiguous (..., C) input, got ", x.str());
  const int64_t c = x.size(-1);
  for (const Tensor* p : {&weight, &bias}) {
    COURSE_CHECK(
        p->dtype() == DType::kF32 && p->dim() == 1 && p->size(0) == c && p->device() == x.device(),
        "layer norm parameters must be (", c, ",) f32 on ", x.device().str(), ", got ", p->str());
  }
}

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          LayerNormSaved& saved) {
  check_parameters(x, weight, bias);
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  saved.mean = Tensor::empty({rows}, DType::kF32, x.device());
  saved.rstd = Tensor::empty({rows}, DType::kF32, x.device());
  visit_floating(x.dtype(), "layer_norm_forward", [&]<class T>() {
    for_each_row(x.device(), rows, cols,
                 ops::LayerNormForward<T>{
                     x.data_as<T>(), weight.data_as<float>(), bias.data_as<float>(), y.data_as<T>(),
                     saved.mean.data_as<float>(), saved.rstd.data_as<float>(), cols, eps});
  });
  return y;
}

Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const LayerNormSaved& saved, Tensor& weight_grad, Tensor& bias_grad) {
  check_same(dy, x, "layer_norm_backward");
  check_parameters(x, weight_grad, bias_grad);
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  visit_floating(x.dtype(), "layer_norm_backward", [&]<class T>() {
    for_each_row(
        x.device(), rows, cols,
        ops::LayerNormBackwardInput<T>{dy.data_as<T>(), x.data_as<T>(), weight.data_as<float>(),
                                       saved.mean.data_as<float>(), saved.rstd.data_as<float>(),
                                       dx.data_as<T>(), cols});
    add_column_sums(
        x.device(),
        ops::LayerNormParamTerms<T>{dy.data_as<T>(), x.data_as<T>(), saved.mean.data_as<float>(),
                                    saved.rstd.data_as<float>(), cols},
        rows, cols, {weight_grad.data_as<float>(), bias_grad.data_as<float>()});
  });
  return dx;
}

}  // namespace course
