// Model builders.
#include "common/nn/models.h"

#include <random>

#include "common/nn/coatnet.h"
#include "common/nn/linear.h"
#include "common/nn/model_registry.h"
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

ModulePtr make_model(const ModelConfig& config, Device device) {
  COURSE_CHECK(config.in_channels > 0 && config.num_classes > 0, "a model needs input channels ",
               "and classes, got ", config.in_channels, " and ", config.num_classes);
  COURSE_CHECK(config.resnet_width > 0, "a ResNet's width must be positive, got ",
               config.resnet_width);
  const ModelFamily family = model_family(config.name);
  switch (family) {
    case ModelFamily::kSmallNet:
      return smallnet(config, config.name == "tinynet" ? 8 : 32, device);
    case ModelFamily::kResNet:
      if (config.name == "resnet50") return resnet<Bottleneck>(config, {3, 4, 6, 3}, true, device);
      return resnet<BasicBlock>(config, {2, 2, 2, 2}, config.name == "resnet18", device);
    case ModelFamily::kVit:
    case ModelFamily::kCoatnet: {
      std::mt19937 rng(config.seed);
      return assemble(model_pieces(config), rng, device);
    }
    case ModelFamily::kGpt2:
    case ModelFamily::kLlama:
      break;
  }
  COURSE_FAIL(config.name, " is a ", family_traits(family).name,
              " language model, which reads tokens; the image models are smallnet, tinynet, "
              "the ResNets, the ViTs and the CoAtNets");
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
  if (model_family(name) == ModelFamily::kVit) return own(vit_preset(name));
  return own(coatnet_preset(name));
}

int64_t pieces_parameter_count(const ModelConfig& config) {
  if (model_family(config.name) == ModelFamily::kVit) {
    return vit_parameter_count(vit_config(config));
  }
  return coatnet_parameter_count(coatnet_config(config));
}

ModelPieces model_pieces(const ModelConfig& config) {
  const ModelFamily family = model_family(config.name);
  COURSE_CHECK(family_traits(family).in_pieces, "the models in pieces are ViT's and CoAtNet's, ",
               "not ", family_traits(family).name, "'s ", config.name);
  if (family == ModelFamily::kVit) return vit_pieces(vit_config(config));
  return coatnet_pieces(coatnet_config(config));
}

int64_t min_image_size(const std::string& name) {
  switch (model_family(name)) {
    case ModelFamily::kVit:
      return vit_preset(name).patch;
    case ModelFamily::kCoatnet:
      return coatnet_min_image(coatnet_preset(name));
    case ModelFamily::kSmallNet:
      return 4;  // two 2x2 poolings
    case ModelFamily::kResNet:
      return name == "resnet18-cifar" ? 8 : 32;  // 3 stride-2 stages (+ stem /4)
    case ModelFamily::kGpt2:
    case ModelFamily::kLlama:
      break;
  }
  COURSE_FAIL(name, " reads tokens, not images");
}

}  // namespace course::nn
