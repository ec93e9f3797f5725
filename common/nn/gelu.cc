// GELU layer.
#include "common/nn/gelu.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

Tensor GELU::forward(const Tensor& x) {
  input_ = x;
  return gelu_forward(x);
}

Tensor GELU::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "GELU backward before forward");
  return gelu_backward(dy, input_);
}

}  // namespace course::nn
