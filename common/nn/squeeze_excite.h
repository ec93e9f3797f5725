// Squeeze-and-excitation (Hu et al. 2018), as in CoAtNet's MBConv blocks: each channel of
// (N, C, H, W) scaled by a gate computed from the whole image, sigmoid(fc2(silu(fc1(mean over
// H W)))), fc1 narrowing C to `reduced` channels (a quarter of the block's input in CoAtNet).
// Parameter names: fc1.weight, fc1.bias, fc2.weight, fc2.bias.
#pragma once

#include <random>

#include "common/nn/activation.h"
#include "common/nn/linear.h"

namespace course::nn {

class SqueezeExcite : public Module {
 public:
  SqueezeExcite(int64_t channels, int64_t reduced, std::mt19937& rng, Device device);
  std::vector<Child> children() override;

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Tensor input;
    Tensor gate;  // (N, C) f32
    DType gate_dtype;
  };
  Linear fc1_;
  SiLU silu_;
  Linear fc2_;
  Sigmoid sigmoid_;
};

}  // namespace course::nn
