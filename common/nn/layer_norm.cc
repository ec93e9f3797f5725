// LayerNorm layer.
#include "common/nn/layer_norm.h"

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::nn {

LayerNorm::LayerNorm(int64_t channels, Device device, float eps)
    : weight(Tensor::empty({channels}, DType::kF32, device)),
      bias(zeros({channels}, DType::kF32, device)),
      eps_(eps) {
  fill_(weight.value, 1.0);
}

Tensor LayerNorm::run_forward(const Tensor& x, Context& ctx) {
  Saved saved{x, {}};
  Tensor y = layer_norm_forward(x, weight.f32_value(), bias.f32_value(), eps_, saved.statistics);
  ctx.save(std::move(saved));
  return y;
}

Tensor LayerNorm::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("LayerNorm");
  // One kernel pass gives the input's gradient and the parameters' sums; a deferring context
  // (context.h) gets the sums added to the gradients in its W half.
  Tensor weight_sums = gradient_sums_target(weight, ctx),
         bias_sums = gradient_sums_target(bias, ctx);
  Tensor dx = layer_norm_backward(as_dtype(dy, saved.input.dtype()), saved.input,
                                  weight.f32_value(), saved.statistics, weight_sums, bias_sums);
  ctx.weight_gradient([this, weight_sums, bias_sums] {
    add_gradient_sums(weight, weight_sums);
    add_gradient_sums(bias, bias_sums);
  });
  return dx;
}

void LayerNorm::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  state.parameters.emplace_back(prefix + "bias", &bias);
}

}  // namespace course::nn
