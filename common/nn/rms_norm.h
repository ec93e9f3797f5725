// RMSNorm over the last dimension of (..., C) activations (Llama's normalisation, Zhang and
// Sennrich 2019): x / sqrt(mean(x^2) + eps) times a learned per-channel scale (ones), no
// centring and no shift; eps 1e-5 as Llama 3. Runs in the activations' dtype with f32
// statistics; saves its input and statistics for backward.
#pragma once

#include "common/kernels/layer_norm.h"
#include "common/nn/module.h"

namespace course::nn {

class RmsNorm : public Module {
 public:
  RmsNorm(int64_t channels, Device device, float eps = 1e-5f);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // (C,) ones

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
