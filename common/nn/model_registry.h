// Every model family the course trains, registered once, and the one place a --model name is
// recognised: smallnet (and its quarter-width tinynet), ResNet, GPT-2, Llama, ViT and CoAtNet.
// A family registers a ModelFamilySpec (its traits, its presets' names, and what the course
// builds of a preset: an image network, its smallest input, its pieces for pipeline stages and
// the measured estimates), defined beside the family's code and listed once in
// model_registry.cc. The labs, the builders, the memory estimate and the throughput model ask a
// name's family and its spec here; what a family does not register is refused by name (a
// language model has no image network, a ResNet no pieces), and a name no family registers is
// refused with the known ones, never treated as another family's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/nn/model_pieces.h"
#include "common/nn/module.h"

namespace course::nn {

enum class ModelFamily { kSmallNet, kResNet, kGpt2, kLlama, kVit, kCoatnet };

// An image model as the labs ask for it: a preset's name at their data's channels and classes.
struct ModelConfig {
  std::string name = "smallnet";
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  uint32_t seed = 0;
  int64_t image_size = 0;  // the input's side: a Vision Transformer's patch grid, CoAtNet's grids
  int64_t resnet_width = 64;  // a ResNet's stem and first stage's channels, doubled per stage
};

struct ModelFamilyTraits {
  const char* name;         // as the course's messages name it ("ViT")
  bool images;              // classifies images (days 1-4's image labs), else predicts tokens
  bool transformer_blocks;  // its blocks are attention + MLP, which tensor parallelism cuts
  bool in_pieces;           // built from model_pieces (pipeline stages, the measured estimate)
};

// What a family registers. An image family gives its smallest input and either a builder or,
// in pieces, its pieces (the network is then the pieces assembled), the preset's own input and
// classes, and its parameter count; a language family its names alone (its decoder is built
// from its GptConfig, gpt.h).
struct ModelFamilySpec {
  ModelFamily family;
  ModelFamilyTraits traits;
  std::vector<std::string> (*names)();
  int64_t (*min_image_size)(const std::string& name) = nullptr;
  ModulePtr (*build)(const ModelConfig& config, Device device) = nullptr;
  ModelPieces (*pieces)(const ModelConfig& config) = nullptr;
  ModelConfig (*own_config)(const std::string& name) = nullptr;
  int64_t (*parameter_count)(const ModelConfig& config) = nullptr;
};

const ModelFamilySpec& family_spec(ModelFamily family);
const ModelFamilyTraits& family_traits(ModelFamily family);

// The family registering `name`; throws one message listing every registered name.
ModelFamily model_family(const std::string& name);
// Every family, in the order above, and the names (presets) each registers.
const std::vector<ModelFamily>& model_families();
std::vector<std::string> family_model_names(ModelFamily family);
// The names of the families that classify images (the image labs' --model choices).
std::vector<std::string> image_model_names();

// Each family's spec, defined beside its code (convnets.cc, gpt_config.cc, vit.cc, coatnet.cc).
const ModelFamilySpec& small_net_family();
const ModelFamilySpec& resnet_family();
const ModelFamilySpec& gpt2_family();
const ModelFamilySpec& llama_family();
const ModelFamilySpec& vit_family();
const ModelFamilySpec& coatnet_family();

}  // namespace course::nn
