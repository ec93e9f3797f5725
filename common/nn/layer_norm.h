// LayerNorm over the last dimension of (..., C) activations (the transformer's), with a learned
// per-channel scale (ones) and shift (zeros), eps 1e-5 as PyTorch. Runs in the activations'
// dtype with f32 statistics; keeps its input and statistics for backward.
#pragma once

#include "common/kernels/layer_norm.h"
#include "common/nn/module.h"

namespace course::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t channels, Device device, float eps = 1e-5f);

  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // (C,) ones
  Parameter bias;    // (C,) zeros

 private:
  float eps_;
  Tensor input_;
  LayerNormSaved saved_;
};

}  // namespace course::nn
