// BatchNorm2d layer.
#include "common/nn/batch_norm.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

namespace {

thread_local ChannelSumReducer active_reducer;

Tensor filled(int64_t channels, double value, Device device) {
  Tensor t = Tensor::empty({channels}, DType::kF32, device);
  fill_(t, value);
  return t;
}

}  // namespace

SyncBatchNormScope::SyncBatchNormScope(ChannelSumReducer reduce, bool enabled)
    : previous_(active_reducer) {
  if (enabled) active_reducer = std::move(reduce);
}

SyncBatchNormScope::~SyncBatchNormScope() { active_reducer = std::move(previous_); }

BatchNorm2d::BatchNorm2d(int64_t channels, Device device, BatchNormActivation activation,
                         float momentum, float eps)
    : weight(filled(channels, 1.0, device)),
      bias(filled(channels, 0.0, device)),
      running_mean(filled(channels, 0.0, device)),
      running_var(filled(channels, 1.0, device)),
      activation_(activation),
      momentum_(momentum),
      eps_(eps) {}

Tensor BatchNorm2d::run_forward(const Tensor& x, Context& ctx) {
  if (!training_) {
    return batch_norm_eval(x, weight.f32_value(), bias.f32_value(), running_mean, running_var, eps_,
                           activation_);
  }
  Saved saved{x, {}, active_reducer};
  Tensor y = batch_norm_train(x, weight.f32_value(), bias.f32_value(), running_mean, running_var,
                              momentum_, eps_, saved.statistics, saved.reduce, activation_);
  ctx.save(std::move(saved));
  return y;
}

Tensor BatchNorm2d::run_backward(const Tensor& dy, Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("BatchNorm2d (after a training forward)");
  Tensor dx = batch_norm_backward(dy, saved.input, weight.f32_value(), bias.f32_value(),
                                  saved.statistics, weight.grad, bias.grad, saved.reduce);
  grad_ready(weight);
  grad_ready(bias);
  return dx;
}

void BatchNorm2d::collect(const std::string& prefix, ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  state.parameters.emplace_back(prefix + "bias", &bias);
  state.buffers.emplace_back(prefix + "running_mean", &running_mean);
  state.buffers.emplace_back(prefix + "running_var", &running_var);
}

}  // namespace course::nn
