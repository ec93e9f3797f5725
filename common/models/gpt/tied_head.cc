// Tied output layer.
#include "common/models/gpt/tied_head.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/nn/autocast.h"

namespace course::nn {

TiedHead::TiedHead(Parameter& embedding) : weight_(embedding) {}

Tensor TiedHead::run_forward(const Tensor& h, Context& ctx) {
  const int64_t channels = weight_.value.size(1), vocabulary = weight_.value.size(0);
  COURSE_CHECK(h.dim() >= 2 && h.size(-1) == channels, "the output layer needs (..., ", channels,
               ") activations, got ", h.str());
  const DType dtype = matmul_dtype(h);
  const Tensor w = as_dtype(weight_.value, dtype);
  Saved saved{as_dtype(h, dtype).view({h.numel() / channels, channels}), h.shape(),
              kept_for_backward(weight_, w)};
  Shape logits_shape = h.shape();
  logits_shape.back() = vocabulary;
  Tensor logits = matmul(saved.rows, w, false, true).view(logits_shape);
  ctx.save(std::move(saved));
  return logits;
}

Tensor TiedHead::run_backward(const Tensor& dlogits, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("TiedHead");
  const Tensor grad =
      as_dtype(dlogits, saved.rows.dtype()).view({saved.rows.size(0), weight_.value.size(0)});
  ctx.weight_gradient([this, grad, rows = saved.rows] {
    add_weight_gradient(grad, rows, weight_.grad);  // dW += dlogits^T h
  });
  const Tensor w = saved.weight.defined() ? saved.weight : as_dtype(weight_.value, grad.dtype());
  return matmul(grad, w).view(saved.input_shape);
}

}  // namespace course::nn
