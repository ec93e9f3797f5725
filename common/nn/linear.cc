// Linear layer through GEMM (oneDNN / cuBLAS).
#include "common/nn/linear.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/linear.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"

namespace course::nn {

Linear::Linear(int64_t in_features, int64_t out_features, std::mt19937& rng, Device device)
    : weight(uniform({out_features, in_features}, 1.0f / std::sqrt(static_cast<float>(in_features)),
                     rng, device)),
      bias(uniform({out_features}, 1.0f / std::sqrt(static_cast<float>(in_features)), rng,
                   device)) {}

Linear::Linear(Tensor w, Tensor b, LinearEpilogue epilogue)
    : weight(std::move(w)), bias(std::move(b)), epilogue_(epilogue) {
  COURSE_CHECK(weight.value.dim() == 2 && bias->value.shape() == Shape({weight.value.size(0)}),
               "a linear layer needs an (out, in) weight and an (out,) bias, got ",
               weight.value.str(), " and ", bias->value.str());
}

Linear::Linear(Tensor w) : weight(std::move(w)) {
  COURSE_CHECK(weight.value.dim() == 2, "a linear layer needs an (out, in) weight, got ",
               weight.value.str());
}

namespace {

// (..., n) as (rows, n): the leading dimensions are independent rows of one GEMM.
Tensor as_rows(const Tensor& t) { return t.view({t.numel() / t.size(-1), t.size(-1)}); }

}  // namespace

Tensor Linear::run_forward(const Tensor& x, Context& ctx) {
  const int64_t in = weight.value.size(1);
  COURSE_CHECK(x.dim() >= 2 && x.size(-1) == in, "Linear(", in, " -> ", weight.value.size(0),
               ") got input ", x.str());
  const DType dtype = matmul_dtype(x);
  Saved saved{as_rows(as_dtype(x, dtype)), x.shape(), Tensor(), Tensor()};
  const Tensor w = as_dtype(weight.value, dtype);
  saved.weight = kept_for_backward(weight, w);
  const Tensor y =
      bias ? linear_forward(saved.input, w, bias->f32_value(), epilogue_, &saved.pre_activation)
           : matmul(saved.input, w, false, true);
  Shape out_shape = x.shape();
  out_shape.back() = weight.value.size(0);
  ctx.save(std::move(saved));
  return y.view(out_shape);
}

Tensor Linear::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("Linear");
  Tensor grad_out = as_rows(as_dtype(dy, saved.input.dtype()));
  if (epilogue_ == LinearEpilogue::kBiasGelu)
    grad_out = gelu_backward(grad_out, saved.pre_activation);
  ctx.weight_gradient([this, grad_out, input = saved.input] {
    // dW += dy^T x, db += dy summed over the rows
    add_linear_gradients(grad_out, input, weight.grad, bias ? &bias->grad : nullptr);
    if (bias) grad_ready(*bias);
    grad_ready(weight);
  });
  const Tensor w =
      saved.weight.defined() ? saved.weight : as_dtype(weight.value, saved.input.dtype());
  return matmul(grad_out, w).view(saved.input_shape);  // dx = dy W
}

void Linear::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  if (bias) state.parameters.emplace_back(prefix + "bias", &*bias);
}

}  // namespace course::nn
