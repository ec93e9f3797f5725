// Conv2d layer: square kernel, no bias (a batch norm follows); oneDNN / cuDNN underneath.
#pragma once

#include <random>

#include "common/kernels/conv2d.h"
#include "common/nn/module.h"

namespace course::nn {

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Conv2dShape shape,
         std::mt19937& rng, Device device);

  Tensor forward(const Tensor& x) override;  // (N, C, H, W) -> (N, O, OH, OW), x's format
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // (O, C, K, K)

 private:
  Conv2dShape shape_;
  Tensor input_;           // the input in the compute dtype
  Tensor compute_weight_;  // the weight in the compute dtype
};

}  // namespace course::nn
