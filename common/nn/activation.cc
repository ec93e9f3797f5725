// Elementwise activation layers.
#include "common/nn/activation.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

Activation::Activation(const char* name, Forward forward, Backward backward)
    : name_(name), forward_(forward), backward_(backward) {}

Tensor Activation::run_forward(const Tensor& x, Context& ctx) {
  ctx.save(x);
  return forward_(x);
}

Tensor Activation::run_backward(const Tensor& dy, Context& ctx) {
  return backward_(dy, ctx.saved<Tensor>(name_));
}

ReLU::ReLU() : Activation("ReLU", relu_forward, relu_backward) {}

GELU::GELU() : Activation("GELU", gelu_forward, gelu_backward) {}

SiLU::SiLU() : Activation("SiLU", silu_forward, silu_backward) {}

Sigmoid::Sigmoid() : Activation("Sigmoid", sigmoid_forward, sigmoid_backward) {}

Tanh::Tanh() : Activation("Tanh", tanh_forward, tanh_backward) {}

SwiGLU::SwiGLU() : Activation("SwiGLU", swiglu_forward, swiglu_backward) {}

}  // namespace course::nn
