// Linear layer through GEMM (OpenBLAS / cuBLAS).
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

Tensor Linear::forward(const Tensor& x) {
  COURSE_CHECK(x.dim() == 2 && x.size(1) == weight.value.size(1), "Linear(", weight.value.size(1),
               " -> ", weight.value.size(0), ") got input ", x.str());
  const DType dtype = matmul_dtype(x);
  input_ = as_dtype(x, dtype);
  compute_weight_ = as_dtype(weight.value, dtype);
  Tensor y = matmul(input_, compute_weight_, false, true);
  add_row_bias_(y, bias.value);
  return y;
}

Tensor Linear::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "Linear backward before forward");
  const Tensor grad_out = as_dtype(dy, input_.dtype());
  add_column_sums_(grad_out, bias.grad);
  grad_ready(bias);
  if (input_.dtype() == DType::kF32) {
    gemm(grad_out, true, input_, false, weight.grad, 1.0f, 1.0f);  // dW += dy^T x
  } else {
    axpy_(1.0f, cast(matmul(grad_out, input_, true, false), DType::kF32), weight.grad);
  }
  grad_ready(weight);
  return matmul(grad_out, compute_weight_);  // dx = dy W
}

void Linear::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  state.parameters.emplace_back(prefix + "bias", &bias);
}

}  // namespace course::nn
