// Elementwise activation layers.
#include "common/nn/activation.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

Activation::Activation(const char* name, Forward forward, Backward backward)
    : name_(name), forward_(forward), backward_(backward) {}

Tensor Activation::forward(const Tensor& x) {
  input_ = x;
  return forward_(x);
}

Tensor Activation::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), name_, " backward before forward");
  return backward_(dy, input_);
}

ReLU::ReLU() : Activation("ReLU", relu_forward, relu_backward) {}

GELU::GELU() : Activation("GELU", gelu_forward, gelu_backward) {}

}  // namespace course::nn
