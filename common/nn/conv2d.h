// Conv2d layer: square kernel, optionally grouped (depthwise when groups = channels), without a
// bias where a batch norm follows and with one where none does (CoAtNet's projections); oneDNN /
// cuDNN underneath.
#pragma once

#include <optional>
#include <random>

#include "common/kernels/conv2d.h"
#include "common/nn/module.h"

namespace course::nn {

class Conv2d : public Module {
 public:
  // Kaiming-normal weights over the fan-in (C / groups) K K; a bias of zeros when with_bias.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Conv2dShape shape,
         std::mt19937& rng, Device device, bool with_bias = false);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;               // (O, C / groups, K, K)
  std::optional<Parameter> bias;  // (O,)
  Conv2dShape shape() const { return shape_; }

 protected:
  // (N, C, H, W) -> (N, O, OH, OW), in x's memory format
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  // The weight as the convolution reads it, made in one pass over the parameter: cast to x's
  // dtype and relaid in x's memory format where the library wants that (the parameter itself
  // when it already is both).
  Tensor compute_weights(const Tensor& x) const;
  struct Saved {
    Tensor input;    // in the compute dtype
    Tensor weights;  // forward's compute weights where kept (Module::kept_for_backward)
  };
  Conv2dShape shape_;
};

}  // namespace course::nn
