// The convolutional families' preset tables, builders and registrations (convnets.h).
#include "common/models/convnets/convnets.h"

#include "common/models/convnets/residual.h"
#include "common/models/presets.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
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

// The presets: each name's shape, registered once (the family's names, its builder and its
// smallest input read them).
struct SmallNetPreset {
  std::string name;
  int64_t width;  // the first stage's channels
};

const std::vector<SmallNetPreset>& small_net_presets() {
  static const std::vector<SmallNetPreset> presets = {{"smallnet", 32}, {"tinynet", 8}};
  return presets;
}

struct ResnetPreset {
  std::string name;
  bool bottleneck;     // ResNet-50's 1x1-3x3-1x1 blocks, else two 3x3 (BasicBlock)
  int blocks[4];       // per stage
  bool imagenet_stem;  // 7x7/2 convolution and 3x3/2 max pooling, else a CIFAR stem (3x3/1)
};

const std::vector<ResnetPreset>& resnet_presets() {
  static const std::vector<ResnetPreset> presets = {
      {"resnet18-cifar", false, {2, 2, 2, 2}, false},
      {"resnet18", false, {2, 2, 2, 2}, true},
      {"resnet50", true, {3, 4, 6, 3}, true},
  };
  return presets;
}

ModulePtr build_small_net(const ModelConfig& config, Device device) {
  return smallnet(config, find_preset(small_net_presets(), config.name, "smallnet").width, device);
}

ModulePtr build_resnet(const ModelConfig& config, Device device) {
  const ResnetPreset preset = find_preset(resnet_presets(), config.name, "ResNet");
  if (preset.bottleneck) {
    return resnet<Bottleneck>(config, preset.blocks, preset.imagenet_stem, device);
  }
  return resnet<BasicBlock>(config, preset.blocks, preset.imagenet_stem, device);
}

}  // namespace

const ModelFamilySpec& small_net_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "smallnet",
                 .images = true,
                 .transformer_blocks = false,
                 .in_pieces = false},
      .names = [] { return preset_names(small_net_presets()); },
      .min_image_size = [](const std::string&) -> int64_t { return 4; },  // two 2x2 poolings
      .build = build_small_net};
  return spec;
}

const ModelFamilySpec& resnet_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "ResNet", .images = true, .transformer_blocks = false, .in_pieces = false},
      .names = [] { return preset_names(resnet_presets()); },
      // 3 stride-2 stages, and the ImageNet stem's 4
      .min_image_size = [](const std::string& name) -> int64_t {
        return find_preset(resnet_presets(), name, "ResNet").imagenet_stem ? 32 : 8;
      },
      .build = build_resnet};
  return spec;
}

namespace {

// smallnet's and ResNet's families in the registry (model_registry.h), at their places in
// --model's listing.
[[maybe_unused]] const bool kConvnetFamiliesRegistered =
    register_model_family(small_net_family(), 0) && register_model_family(resnet_family(), 1);

}  // namespace

}  // namespace course::nn
