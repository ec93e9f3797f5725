// CoAtNet (Dai et al. 2021): a convolution stem, MBConv stages, then transformer stages with a
// relative position bias, a pooled head (common/models/coatnet/coatnet_blocks.h). Every stage but a
// transformer stage that follows MBConv at the same resolution (CoAtNet-6/7's third) halves
// the map in its first block.
//
// Presets: the paper's CoAtNet-0 to CoAtNet-7 at 224 px with ImageNet's 1,000 classes (Table 3
// and Table 14's widths and depths; for counts and memory), and coatnet-micro (a 16-wide stem,
// MBConv 32 and 48, transformers 64 and 96 with 32-wide heads), which trains on Fashion-MNIST's
// 28 px images on a CPU. The blocks of every stage are one Sequential, "blocks", the
// token conversion before the first transformer block among them, so each block can be a unit
// of sharded data parallelism. Names: stem.*, blocks.<i>.* (the blocks'), head.*.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/models/family_spec.h"
#include "common/nn/model_pieces.h"
#include "common/nn/module.h"

namespace course::nn {

struct CoatnetStage {
  bool attention;  // transformer blocks, else MBConv
  int64_t depth, channels;
  bool downsample = true;  // the first block halves the map
};

struct CoatnetConfig {
  std::string name;
  int64_t image, stem;
  std::vector<CoatnetStage> stages;
  int64_t in_channels = 3, classes = 1000, head_dim = 32;
};

const std::vector<CoatnetConfig>& coatnet_presets();
// Throws listing the presets.
CoatnetConfig coatnet_preset(const std::string& name);
// The preset `config` names, at its channels, classes and image size (0: the preset's).
CoatnetConfig coatnet_config(const ModelConfig& config);

// The sum of the blocks' parameters, worked out from the widths (checked against a built model).
int64_t coatnet_parameter_count(const CoatnetConfig& config);

// The smallest image side the config's stages can take.
int64_t coatnet_min_image(const CoatnetConfig& config);

// The stem, the blocks (the token conversion among them) and the head, each buildable alone.
ModelPieces coatnet_pieces(const CoatnetConfig& config);

// Throws one message for a shape the model cannot take (an image too small or odd where an
// MBConv stage halves it, a width not a multiple of the heads' width, a size not positive).
ModulePtr make_coatnet(const CoatnetConfig& config, std::mt19937& rng, Device device);

// The CoAtNet family's registration (model_registry.cc).
const ModelFamilySpec& coatnet_family();

}  // namespace course::nn
