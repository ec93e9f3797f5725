// Conv2d layer.
#include "common/nn/conv2d.h"

#include "common/kernels/channel_scale.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/nn/autocast.h"
#include "common/nn/init.h"

namespace course::nn {

namespace {

int64_t group_inputs(int64_t in_channels, int64_t out_channels, Conv2dShape shape) {
  COURSE_CHECK(
      shape.groups > 0 && in_channels % shape.groups == 0 && out_channels % shape.groups == 0,
      "a convolution of ", in_channels, " -> ", out_channels, " channels cannot be cut into ",
      shape.groups, " groups");
  return in_channels / shape.groups;
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Conv2dShape shape,
               std::mt19937& rng, Device device, bool with_bias)
    : weight(kaiming_normal(
          {out_channels, group_inputs(in_channels, out_channels, shape), kernel, kernel},
          group_inputs(in_channels, out_channels, shape) * kernel * kernel, rng, device)),
      shape_(shape) {
  if (with_bias) bias.emplace(zeros({out_channels}, DType::kF32, device));
}

Tensor Conv2d::compute_weights(const Tensor& x) const {
  return to_dtype_and_format(weight.value, x.dtype(), conv2d_weight_format(x));
}

Tensor Conv2d::run_forward(const Tensor& x, Context& ctx) {
  const DType dtype = matmul_dtype(x);
  Saved saved{as_dtype(x, dtype), Tensor()};
  const Tensor weights = compute_weights(saved.input);
  Tensor y = conv2d_forward(saved.input, weights, shape_);
  saved.weights = kept_for_backward(weight, weights);
  if (bias) add_channel_bias_(y, bias->f32_value());
  ctx.save(std::move(saved));
  return y;
}

Tensor Conv2d::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("Conv2d");
  const Tensor& input = saved.input;
  const Tensor grad_out = as_dtype(dy, input.dtype());
  // In 16 bits, the gradient joins the f32 master gradient in the same pass.
  conv2d_backward_weights_add(grad_out, input, weight.grad, shape_);
  grad_ready(weight);
  if (bias) {
    add_channel_bias_grad_(grad_out, bias->grad);
    grad_ready(*bias);
  }
  if (!ctx.input_gradient_wanted()) return Tensor();  // the image's gradient: of no use
  const Tensor weights = saved.weights.defined() ? saved.weights : compute_weights(input);
  return conv2d_backward_data(grad_out, weights, input, shape_);
}

void Conv2d::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  if (bias) state.parameters.emplace_back(prefix + "bias", &*bias);
}

}  // namespace course::nn
