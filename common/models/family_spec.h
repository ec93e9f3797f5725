// What a model family registers: its traits, its presets' names, and what the course builds of a
// preset (an image network, its smallest input, its pieces for pipeline stages and the measured
// estimates). Each family defines its spec in its own folder (convnets/, gpt/, vit/, coatnet/)
// from its presets and registers it there, once, at start-up (register_model_family): a program
// knows the families it links, and no list elsewhere names them. A family is its spec: the
// registry (model_registry.h) hands out references to these objects and compares them, never
// names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/models/workload.h"
#include "common/nn/model_pieces.h"
#include "common/nn/module.h"

namespace course::nn {

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

// An image family gives its smallest input and either a builder or, in pieces, its pieces (the
// network is then the pieces assembled), the preset's own input and classes, its parameter count
// and, where it has a closed form, its workload (else the throughput model measures its pieces);
// a language family its names alone (its decoder is built from its GptConfig, gpt/gpt.h).
struct ModelFamilySpec {
  ModelFamilyTraits traits;
  std::vector<std::string> (*names)();
  int64_t (*min_image_size)(const std::string& name) = nullptr;
  ModulePtr (*build)(const ModelConfig& config, Device device) = nullptr;
  ModelPieces (*pieces)(const ModelConfig& config) = nullptr;
  ModelConfig (*own_config)(const std::string& name) = nullptr;
  int64_t (*parameter_count)(const ModelConfig& config) = nullptr;
  Workload (*workload)(const ModelConfig& config) = nullptr;
  // The network's shape as JSON text, an object under its family's key ({"vit": {...}}), for
  // another implementation to build the same network (bench/compare/torch_side.py); none: it is
  // built there from its name.
  std::string (*shape_json)(const ModelConfig& config) = nullptr;
};

// Lists `family` in the registry at `position` (the order in which --model's choices and the
// messages list the families); a family's folder calls it from a namespace-scope constant, and
// its library is `alwayslink` so that a program linking it keeps the registration. Returns true.
bool register_model_family(const ModelFamilySpec& family, int position);
// Every family the program links, in their registered positions' order.
std::vector<const ModelFamilySpec*> model_families();

}  // namespace course::nn
