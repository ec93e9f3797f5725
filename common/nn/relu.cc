// ReLU layer.
#include "common/nn/relu.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

Tensor ReLU::forward(const Tensor& x) {
  input_ = x;
  return relu_forward(x);
}

Tensor ReLU::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "ReLU backward before forward");
  return relu_backward(dy, input_);
}

}  // namespace course::nn
