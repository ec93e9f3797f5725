// The convolutional families: smallnet (and tinynet, a quarter as wide) and the ResNets, their
// builders and their registrations.
#include "common/nn/linear.h"
#include "common/nn/model_registry.h"
#include "common/nn/pooling.h"
#include "common/nn/residual.h"
#include "common/nn/sequential.h"

namespace course::nn {

namespace {

template <class Block>
void add_stage(Sequential& net, int64_t& in_channels, int64_t channels, int blocks, int64_t stride,
               std::mt19937& rng, Device device, const std::string& name) {
  auto stage = std::make_unique<Sequential>();
  for (int b = 0; b < blocks; ++b) {
    stage->add(std::make_unique<Block>(in_channels, channels, b == 0 ? stride : 1, rng, device));
    in_channels = channels * Block::kExpansion;
  }
  net.add(std::move(stage), name);
}

template <class Block>
ModulePtr resnet(const ModelConfig& c, const int (&blocks)[4], bool imagenet_stem, Device device) {
  std::mt19937 rng(c.seed);
  auto net = std::make_unique<Sequential>();
  auto stem = std::make_unique<Sequential>();
  const int64_t width = c.resnet_width;
  if (imagenet_stem) {
    conv_bn(*stem, c.in_channels, width, 7, 2, true, rng, device);
    stem->add(std::make_unique<MaxPool2d>(3, 2, 1));
  } else {
    conv_bn(*stem, c.in_channels, width, 3, 1, true, rng, device);
  }
  net->add(std::move(stem), "stem");
  int64_t channels = width;
  for (int s = 0; s < 4; ++s) {
    add_stage<Block>(*net, channels, width << s, blocks[s], s == 0 ? 1 : 2, rng, device,
                     "layer" + std::to_string(s + 1));
  }
  net->add(std::make_unique<GlobalAvgPool2d>(), "pool");
  net->add(std::make_unique<Linear>(channels, c.num_classes, rng, device), "fc");
  return net;
}

// Three 3x3 convolutions of `width`, 2 `width` and 4 `width` channels, two poolings between.
ModulePtr smallnet(const ModelConfig& c, int64_t width, Device device) {
  std::mt19937 rng(c.seed);
  auto net = std::make_unique<Sequential>();
  conv_bn(*net, c.in_channels, width, 3, 1, true, rng, device);
  net->add(std::make_unique<MaxPool2d>(2, 2));
  conv_bn(*net, width, 2 * width, 3, 1, true, rng, device);
  net->add(std::make_unique<MaxPool2d>(2, 2));
  conv_bn(*net, 2 * width, 4 * width, 3, 1, true, rng, device);
  net->add(std::make_unique<GlobalAvgPool2d>());
  net->add(std::make_unique<Linear>(4 * width, c.num_classes, rng, device));
  return net;
}

ModulePtr build_small_net(const ModelConfig& config, Device device) {
  return smallnet(config, config.name == "tinynet" ? 8 : 32, device);
}

ModulePtr build_resnet(const ModelConfig& config, Device device) {
  if (config.name == "resnet50") return resnet<Bottleneck>(config, {3, 4, 6, 3}, true, device);
  return resnet<BasicBlock>(config, {2, 2, 2, 2}, config.name == "resnet18", device);
}

}  // namespace

const ModelFamilySpec& small_net_family() {
  static const ModelFamilySpec spec{
      .family = ModelFamily::kSmallNet,
      .traits = {.name = "smallnet",
                 .images = true,
                 .transformer_blocks = false,
                 .in_pieces = false},
      .names =
          [] {
            return std::vector<std::string>{"smallnet", "tinynet"};
          },
      .min_image_size = [](const std::string&) -> int64_t { return 4; },  // two 2x2 poolings
      .build = build_small_net};
  return spec;
}

const ModelFamilySpec& resnet_family() {
  static const ModelFamilySpec spec{
      .family = ModelFamily::kResNet,
      .traits = {.name = "ResNet", .images = true, .transformer_blocks = false, .in_pieces = false},
      .names =
          [] {
            return std::vector<std::string>{"resnet18-cifar", "resnet18", "resnet50"};
          },
      // 3 stride-2 stages (+ the ImageNet stem's /4)
      .min_image_size = [](const std::string& name) -> int64_t {
        return name == "resnet18-cifar" ? 8 : 32;
      },
      .build = build_resnet};
  return spec;
}

}  // namespace course::nn
