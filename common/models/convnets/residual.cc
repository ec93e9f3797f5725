// Residual blocks.
#include "common/models/convnets/residual.h"

#include "common/kernels/elementwise.h"
#include "common/nn/batch_norm.h"
#include "common/nn/conv2d.h"

namespace course::nn {

void conv_bn(Sequential& seq, int64_t in, int64_t out, int64_t kernel, int64_t stride, bool relu,
             std::mt19937& rng, Device device) {
  seq.add(std::make_unique<Conv2d>(in, out, kernel, Conv2dShape{stride, kernel / 2}, rng, device));
  seq.add(std::make_unique<BatchNorm2d>(
      out, device, relu ? BatchNormActivation::kRelu : BatchNormActivation::kNone));
}

// Child contexts of a call: 0 the main path, 1 the shortcut. The sum and the ReLU are one pass,
// whose output (positive exactly where the sum is) masks the gradient.
Tensor ResidualBlock::run_forward(const Tensor& x, Context& ctx) {
  const Tensor main = main_.forward(x, ctx.child(0));
  const Tensor shortcut = shortcut_.size() > 0 ? shortcut_.forward(x, ctx.child(1)) : x;
  Tensor y = add_relu(main, shortcut);
  ctx.save(y);
  return y;
}

Tensor ResidualBlock::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor g = relu_backward(dy, ctx.saved<Tensor>("ResidualBlock"));
  const Tensor dx_main = main_.backward(g, ctx.child(0));
  const Tensor dx_shortcut = shortcut_.size() > 0 ? shortcut_.backward(g, ctx.child(1)) : g;
  return add(dx_main, dx_shortcut);
}

std::vector<Module::Child> ResidualBlock::children() {
  return {{"", &main_}, {"downsample", &shortcut_}};
}

void ResidualBlock::add_shortcut(int64_t in_channels, int64_t out_channels, int64_t stride,
                                 std::mt19937& rng, Device device) {
  if (stride != 1 || in_channels != out_channels) {
    conv_bn(shortcut_, in_channels, out_channels, 1, stride, false, rng, device);
  }
}

BasicBlock::BasicBlock(int64_t in_channels, int64_t channels, int64_t stride, std::mt19937& rng,
                       Device device) {
  conv_bn(main_, in_channels, channels, 3, stride, true, rng, device);
  conv_bn(main_, channels, channels, 3, 1, false, rng, device);
  add_shortcut(in_channels, channels, stride, rng, device);
}

Bottleneck::Bottleneck(int64_t in_channels, int64_t channels, int64_t stride, std::mt19937& rng,
                       Device device) {
  conv_bn(main_, in_channels, channels, 1, 1, true, rng, device);
  conv_bn(main_, channels, channels, 3, stride, true, rng, device);
  conv_bn(main_, channels, channels * kExpansion, 1, 1, false, rng, device);
  add_shortcut(in_channels, channels * kExpansion, stride, rng, device);
}

}  // namespace course::nn
