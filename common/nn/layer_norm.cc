// LayerNorm layer.
#include "common/nn/layer_norm.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

LayerNorm::LayerNorm(int64_t channels, Device device, float eps)
    : weight(Tensor::empty({channels}, DType::kF32, device)),
      bias(zeros({channels}, DType::kF32, device)),
      eps_(eps) {
  fill_(weight.value, 1.0);
}

Tensor LayerNorm::forward(const Tensor& x) {
  input_ = x;
  return layer_norm_forward(x, weight.value, bias.value, eps_, saved_);
}

Tensor LayerNorm::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "LayerNorm backward before forward");
  Tensor dx = layer_norm_backward(dy, input_, weight.value, saved_, weight.grad, bias.grad);
  grad_ready(weight);
  grad_ready(bias);
  return dx;
}

void LayerNorm::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  state.parameters.emplace_back(prefix + "bias", &bias);
}

}  // namespace course::nn
