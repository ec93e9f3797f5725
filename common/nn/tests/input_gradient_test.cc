// A backward call that does not want its input's gradient (a network fed with data): the
// network's first layer, found through nested chains and wrappers, skips it (a convolution's
// backward-data pass) and returns an undefined tensor; every parameter gradient is that of a
// full backward; only the layer fed the network's own input skips; the wish lasts one call and
// reaches into activation checkpointing's recomputation.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/nn/activation.h"
#include "common/nn/batch_norm.h"
#include "common/nn/checkpointed.h"
#include "common/nn/conv2d.h"
#include "common/nn/hooked.h"
#include "common/nn/sequential.h"
#include "common/testing/devices.h"
#include "common/testing/parameter_values.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

using testing::kCpu;
using testing::parameter_gradients;

// A ResNet's stem in miniature, wrapped as FSDP wraps it: Hooked(conv 3x3 of 3 -> 4, batch
// norm), ReLU, conv 3x3 of 4 -> 5 with stride 2.
Sequential stem_network() {
  std::mt19937 rng(11);
  auto stem = std::make_unique<Sequential>();
  stem->add(std::make_unique<Conv2d>(3, 4, 3, Conv2dShape{.stride = 1, .padding = 1}, rng, kCpu));
  stem->add(std::make_unique<BatchNorm2d>(4, kCpu));
  Sequential net;
  net.add(std::make_unique<Hooked>(std::move(stem), ModuleHooks{}));
  net.add(std::make_unique<ReLU>());
  net.add(std::make_unique<Conv2d>(4, 5, 3, Conv2dShape{.stride = 2, .padding = 1}, rng, kCpu));
  return net;
}

// An odd batch of 3 images of 7 x 5 (signed values) and the gradient of the (3, 5, 4, 3) output.
Tensor images() { return testing::random_tensor({3, 3, 7, 5}, DType::kF32, kCpu, 5).tensor; }
Tensor output_gradient() {
  return testing::random_tensor({3, 5, 4, 3}, DType::kF32, kCpu, 6).tensor;
}

TEST(InputGradient, TheFirstConvolutionSkipsItAndTheParameterGradientsAreTheFullBackwards) {
  Sequential full = stem_network();
  full.forward(images());
  const Tensor dx = full.backward(output_gradient());
  ASSERT_TRUE(dx.defined());
  EXPECT_EQ(dx.shape(), Shape({3, 3, 7, 5}));

  Sequential skipping = stem_network();
  Context ctx;
  skipping.forward(images(), ctx);
  ctx.set_input_gradient_wanted(false);
  EXPECT_FALSE(skipping.backward(output_gradient(), ctx).defined());
  EXPECT_EQ(parameter_gradients(skipping), parameter_gradients(full));
  EXPECT_GT(parameter_gradients(full).size(), 0u);

  // backward_to_parameters is that call on the network's own context.
  Sequential by_name = stem_network();
  by_name.forward(images());
  by_name.backward_to_parameters(output_gradient());
  EXPECT_EQ(parameter_gradients(by_name), parameter_gradients(full));
}

TEST(InputGradient, ACheckpointedNetworksFirstConvolutionSkipsIt) {
  Sequential full = stem_network();
  full.forward(images());
  full.backward(output_gradient());

  Checkpointed skipping(std::make_unique<Sequential>(stem_network()));
  Context ctx;
  skipping.forward(images(), ctx);
  ctx.set_input_gradient_wanted(false);
  EXPECT_FALSE(skipping.backward(output_gradient(), ctx).defined());
  EXPECT_EQ(parameter_gradients(skipping), parameter_gradients(full));
}

TEST(InputGradient, OnlyTheLayerFedTheNetworksInputSkipsIt) {
  // ReLU first: the convolution after it is fed the ReLU's output, whose gradient ReLU needs.
  auto network = [] {
    std::mt19937 rng(12);
    Sequential net;
    net.add(std::make_unique<ReLU>());
    net.add(std::make_unique<Conv2d>(3, 5, 3, Conv2dShape{.stride = 2, .padding = 1}, rng, kCpu));
    return net;
  };
  Sequential full = network(), skipping = network();
  full.forward(images());
  const Tensor want = full.backward(output_gradient());
  Context ctx;
  skipping.forward(images(), ctx);
  ctx.set_input_gradient_wanted(false);
  const Tensor got = skipping.backward(output_gradient(), ctx);
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(parameter_gradients(skipping), parameter_gradients(full));
}

TEST(InputGradient, TheWishLastsOneBackwardCall) {
  Sequential net = stem_network();
  Context ctx;
  net.forward(images(), ctx);
  ctx.set_input_gradient_wanted(false);
  EXPECT_FALSE(net.backward(output_gradient(), ctx).defined());
  net.forward(images(), ctx);
  EXPECT_TRUE(net.backward(output_gradient(), ctx).defined());
  net.forward(images());
  net.backward_to_parameters(output_gradient());
  net.forward(images());
  EXPECT_TRUE(net.backward(output_gradient()).defined());
}

}  // namespace
}  // namespace course::nn
