// BatchNorm2d layer: per-channel normalisation with learnt scale and shift, batch statistics in
// training and running statistics in evaluation (momentum 0.1, eps 1e-5, as PyTorch).
#pragma once

#include "common/kernels/batch_norm.h"
#include "common/nn/module.h"

namespace course::nn {

class BatchNorm2d : public Module {
 public:
  BatchNorm2d(int64_t channels, Device device, float momentum = 0.1f, float eps = 1e-5f);

  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // gamma, (C,), ones
  Parameter bias;    // beta, (C,), zeros
  Tensor running_mean, running_var;

 private:
  float momentum_, eps_;
  Tensor input_;
  BatchNormSaved saved_;
};

}  // namespace course::nn
