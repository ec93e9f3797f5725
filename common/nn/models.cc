// Model builders.
#include "common/nn/models.h"

#include <random>

#include "common/nn/coatnet.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
#include "common/nn/residual.h"
#include "common/nn/vit.h"

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

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {"smallnet", "tinynet", "resnet18-cifar", "resnet18",
                                    "resnet50"};
    for (const VitConfig& vit : vit_presets()) all.push_back(vit.name);
    for (const CoatnetConfig& coatnet : coatnet_presets()) all.push_back(coatnet.name);
    return all;
  }();
  return names;
}

ModulePtr make_model(const ModelConfig& config, Device device) {
  COURSE_CHECK(config.in_channels > 0 && config.num_classes > 0, "a model needs input channels ",
               "and classes, got ", config.in_channels, " and ", config.num_classes);
  COURSE_CHECK(config.resnet_width > 0, "a ResNet's width must be positive, got ",
               config.resnet_width);
  if (config.name == "smallnet") return smallnet(config, 32, device);
  if (config.name == "tinynet") return smallnet(config, 8, device);
  if (config.name == "resnet18-cifar")
    return resnet<BasicBlock>(config, {2, 2, 2, 2}, false, device);
  if (config.name == "resnet18") return resnet<BasicBlock>(config, {2, 2, 2, 2}, true, device);
  if (config.name == "resnet50") return resnet<Bottleneck>(config, {3, 4, 6, 3}, true, device);
  if (is_vit(config.name) || is_coatnet(config.name)) {
    std::mt19937 rng(config.seed);
    return assemble(model_pieces(config), rng, device);
  }
  std::string known;
  for (const auto& name : model_names()) known += (known.empty() ? "" : ", ") + name;
  COURSE_FAIL("unknown model '", config.name, "' (known: ", known, ")");
}

namespace {

// `preset` with the channels, classes and (when given) image size of `config`.
template <class Config>
Config sized(Config preset, const ModelConfig& config) {
  preset.in_channels = config.in_channels;
  preset.classes = config.num_classes;
  if (config.image_size > 0) preset.image = config.image_size;
  return preset;
}

}  // namespace

VitConfig vit_config(const ModelConfig& config) { return sized(vit_preset(config.name), config); }

CoatnetConfig coatnet_config(const ModelConfig& config) {
  return sized(coatnet_preset(config.name), config);
}

ModelConfig preset_model_config(const std::string& name) {
  const auto own = [&name](const auto& preset) {
    return ModelConfig{.name = name,
                       .in_channels = preset.in_channels,
                       .num_classes = preset.classes,
                       .image_size = preset.image};
  };
  if (is_vit(name)) return own(vit_preset(name));
  return own(coatnet_preset(name));
}

int64_t pieces_parameter_count(const ModelConfig& config) {
  if (is_vit(config.name)) return vit_parameter_count(vit_config(config));
  return coatnet_parameter_count(coatnet_config(config));
}

ModelPieces model_pieces(const ModelConfig& config) {
  if (is_vit(config.name)) return vit_pieces(vit_config(config));
  COURSE_CHECK(is_coatnet(config.name), "the models in pieces are ViT's and CoAtNet's, not ",
               config.name);
  return coatnet_pieces(coatnet_config(config));
}

int64_t min_image_size(const std::string& name) {
  if (is_vit(name)) return vit_preset(name).patch;
  if (is_coatnet(name)) return coatnet_min_image(coatnet_preset(name));
  if (name == "smallnet" || name == "tinynet") return 4;  // two 2x2 poolings
  if (name == "resnet18-cifar") return 8;                 // three stride-2 stages
  return 32;                                              // stem /4, three stride-2 stages
}

}  // namespace course::nn
