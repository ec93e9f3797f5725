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

BatchNorm2d::BatchNorm2d(int64_t channels, Device device, float momentum, float eps)
    : weight(filled(channels, 1.0, device)),
      bias(filled(channels, 0.0, device)),
      running_mean(filled(channels, 0.0, device)),
      running_var(filled(channels, 1.0, device)),
      momentum_(momentum),
      eps_(eps) {}

Tensor BatchNorm2d::forward(const Tensor& x) {
  if (!training_) {
    return batch_norm_eval(x, weight.value, bias.value, running_mean, running_var, eps_);
  }
  input_ = x;
  reduce_ = active_reducer;
  return batch_norm_train(x, weight.value, bias.value, running_mean, running_var, momentum_, eps_,
                          saved_, reduce_);
}

Tensor BatchNorm2d::backward(const Tensor& dy) {
  COURSE_CHECK(input_.defined(), "BatchNorm2d backward before a training forward");
  Tensor dx =
      batch_norm_backward(dy, input_, weight.value, saved_, weight.grad, bias.grad, reduce_);
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
