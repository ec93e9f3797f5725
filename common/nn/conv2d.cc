// Conv2d layer.
#include "common/nn/conv2d.h"

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"

namespace course::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Conv2dShape shape,
               std::mt19937& rng, Device device)
    : weight(kaiming_normal({out_channels, in_channels, kernel, kernel},
                            in_channels * kernel * kernel, rng, device)),
      shape_(shape) {}

Tensor Conv2d::forward(const Tensor& x) {
  const DType dtype = matmul_dtype(x);
  input_ = as_dtype(x, dtype);
  compute_weight_ = as_dtype(weight.value, dtype);
  return conv2d_forward(input_, compute_weight_, shape_);
}

Tensor Conv2d::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "Conv2d backward before forward");
  const Tensor grad_out = as_dtype(dy, input_.dtype());
  if (input_.dtype() == DType::kF32) {
    conv2d_backward_weights_add(grad_out, input_, weight.grad, shape_);
  } else {
    Tensor low = zeros(weight.value.shape(), input_.dtype(), input_.device());
    conv2d_backward_weights_add(grad_out, input_, low, shape_);
    axpy_(1.0f, cast(low, DType::kF32), weight.grad);
  }
  grad_ready(weight);
  return conv2d_backward_data(grad_out, compute_weight_, input_, shape_);
}

void Conv2d::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
}

}  // namespace course::nn
