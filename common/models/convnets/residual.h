// Residual blocks of ResNets: BasicBlock (two 3x3 convolutions, ResNet-18/34) and Bottleneck
// (1x1, 3x3, 1x1 with 4x expansion, ResNet-50+). The shortcut is the identity, or a strided
// 1x1 convolution + batch norm when the shape changes; out = relu(main(x) + shortcut(x)), the
// sum and the ReLU in one pass.
#pragma once

#include <random>

#include "common/nn/sequential.h"

namespace course::nn {

// Appends conv (kernel x kernel, "same" padding, stride) -> batch norm (-> ReLU, fused into the
// batch norm: one pass each way) to `seq`: the unit every network of the course is built from.
void conv_bn(Sequential& seq, int64_t in, int64_t out, int64_t kernel, int64_t stride, bool relu,
             std::mt19937& rng, Device device);

class ResidualBlock : public Module {
 public:
  std::vector<Child> children() override;

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
  // Adds the projection shortcut when `stride` or the channel count changes.
  void add_shortcut(int64_t in_channels, int64_t out_channels, int64_t stride, std::mt19937& rng,
                    Device device);

  Sequential main_;
  Sequential shortcut_;  // empty: identity
};

class BasicBlock : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in_channels, int64_t channels, int64_t stride, std::mt19937& rng,
             Device device);
};

class Bottleneck : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in_channels, int64_t channels, int64_t stride, std::mt19937& rng,
             Device device);
};

}  // namespace course::nn
