// LayerNorm over the last dimension of (..., C) activations (the transformer's), with a learned
// per-channel scale (ones) and shift (zeros), eps 1e-5 as PyTorch. Runs in the activations'
// dtype with f32 statistics; saves its input and statistics for backward.
#pragma once

#include "common/kernels/layer_norm.h"
#include "common/nn/module.h"

namespace course::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t channels, Device device, float eps = 1e-5f);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // (C,) ones
  Parameter bias;    // (C,) zeros

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Tensor input;
    LayerNormSaved statistics;
  };
  float eps_;
};

}  // namespace course::nn
