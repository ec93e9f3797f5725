// RMSNorm layer.
#include "common/nn/rms_norm.h"

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::nn {

RmsNorm::RmsNorm(int64_t channels, Device device, float eps)
    : weight(Tensor::empty({channels}, DType::kF32, device)), eps_(eps) {
  fill_(weight.value, 1.0);
}

Tensor RmsNorm::run_forward(const Tensor& x, Context& ctx) {
  Saved saved{x, {}};
  Tensor y = rms_norm_forward(x, weight.f32_value(), eps_, saved.statistics);
  ctx.save(std::move(saved));
  return y;
}

Tensor RmsNorm::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("RmsNorm");
  // The weight's sums reach its gradient as LayerNorm's do.
  Tensor weight_sums = gradient_sums_target(weight, ctx);
  Tensor dx = rms_norm_backward(as_dtype(dy, saved.input.dtype()), saved.input, weight.f32_value(),
                                saved.statistics, weight_sums);
  ctx.weight_gradient([this, weight_sums] { add_gradient_sums(weight, weight_sums); });
  return dx;
}

void RmsNorm::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
}

}  // namespace course::nn
