// The Vision Transformer (Dosovitskiy et al. 2021): the image cut into patches by a
// convolution of kernel = stride = patch, a learned class token and position embedding, pre-LN
// encoder blocks (bidirectional attention, GELU MLP: GPT-2's block without the mask), a final
// LayerNorm and a linear head on the class token.
//
// Presets: the paper's ViT-Ti/16, S/16, B/16, L/16 and H/14 and Zhai et al.'s ViT-G/14 at
// 224 px with ImageNet's 1,000 classes (for counts and memory), and vit-micro (patch 4, 4
// blocks of 64) and vit-mini (patch 4, 6 blocks of 128), which train on Fashion-MNIST's 28 px
// and CIFAR-10's 32 px images on a CPU. Parameter names: stem.patch_embed.proj.weight,
// stem.patch_embed.tokens.bias, stem.embed.cls_token, stem.embed.pos_embed,
// blocks.<l>.attention.ln_1.weight (the GPT-2 block's), ..., head.norm.weight, head.fc.weight.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/models/family_spec.h"
#include "common/nn/model_pieces.h"
#include "common/nn/module.h"

namespace course::nn {

struct VitConfig {
  std::string name;
  int64_t image, patch, layers, heads, channels;
  int64_t hidden = 0;  // the MLP's width; 0: 4 channels
  int64_t in_channels = 3, classes = 1000;

  int64_t mlp_width() const { return hidden > 0 ? hidden : 4 * channels; }
  int64_t patches() const { return (image / patch) * (image / patch); }
};

const std::vector<VitConfig>& vit_presets();
// Throws listing the presets.
VitConfig vit_preset(const std::string& name);
// The preset `config` names, at its channels, classes and image size (0: the preset's).
VitConfig vit_config(const ModelConfig& config);

// patch^2 in C + C + C + (L + 1) C + layers (4 C^2 + 2 C F + 9 C + F) + 2 C + C classes + classes.
int64_t vit_parameter_count(const VitConfig& config);

// Its workload in closed form (workload.h): s = patches + 1 tokens, its patch embedding and
// class head as the ends.
Workload vit_workload(const VitConfig& config);

// The stem (patch embedding, class token and positions), the blocks and the head, each
// buildable alone.
ModelPieces vit_pieces(const VitConfig& config);

// Throws one message for a shape the model cannot take (a patch that does not divide the image,
// heads that do not divide the width, a size not positive).
ModulePtr make_vit(const VitConfig& config, std::mt19937& rng, Device device);

// The ViT family's spec, registered at start-up (family_spec.h).
const ModelFamilySpec& vit_family();

}  // namespace course::nn
