// The Vision Transformer: presets, parameter count and the model.
#include "common/models/vit/vit.h"

#include <nlohmann/json.hpp>

#include "common/core/error.h"
#include "common/kernels/elementwise.h"
#include "common/models/presets.h"
#include "common/nn/conv2d.h"
#include "common/nn/init.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/sequential.h"
#include "common/nn/transformer_blocks.h"
#include "common/nn/vit_tokens.h"

namespace course::nn {

const std::vector<VitConfig>& vit_presets() {
  static const std::vector<VitConfig> presets = {
      {"vit-micro", 28, 4, 4, 4, 64, 0, 1, 10}, {"vit-mini", 32, 4, 6, 4, 128, 0, 3, 10},
      {"vit-ti16", 224, 16, 12, 3, 192},        {"vit-s16", 224, 16, 12, 6, 384},
      {"vit-b16", 224, 16, 12, 12, 768},        {"vit-l16", 224, 16, 24, 16, 1024},
      {"vit-h14", 224, 14, 32, 16, 1280},       {"vit-g14", 224, 14, 48, 16, 1664, 8192},
  };
  return presets;
}

VitConfig vit_preset(const std::string& name) {
  return find_preset(vit_presets(), name, "Vision Transformer");
}

int64_t vit_parameter_count(const VitConfig& c) {
  const int64_t ch = c.channels, f = c.mlp_width();
  const int64_t embedding =
      c.patch * c.patch * c.in_channels * ch + ch + ch + (c.patches() + 1) * ch;
  const int64_t block = 4 * ch * ch + 2 * ch * f + 9 * ch + f;
  return embedding + c.layers * block + 2 * ch + ch * c.classes + c.classes;
}

Workload vit_workload(const VitConfig& c) {
  const double s = static_cast<double>(c.patches() + 1), h = static_cast<double>(c.channels);
  const double f = static_cast<double>(c.mlp_width()), classes = static_cast<double>(c.classes);
  const double heads = static_cast<double>(c.heads);
  const double pixels = static_cast<double>(c.in_channels * c.image * c.image);
  const BlockWork block = transformer_block_work({s, h, heads, heads, f, f});
  // The ends: the image (bf16), a byte a token and channel, the logits in f32; the patch
  // embedding (every pixel once into h channels) and the class head.
  BlockWork ends{.saved_whole_bytes = kBf16Bytes * pixels + s * h + 4 * classes,
                 .products = {{s - 1, h, pixels / (s - 1)}, {1, classes, h}}};
  ends.multiply_adds = multiply_adds(ends.products);
  return {.name = c.name,
          .sample = "images of " + std::to_string(c.image) + " px",
          .parameters = static_cast<double>(vit_parameter_count(c)),
          .multiply_adds = static_cast<double>(c.layers) * block.multiply_adds + ends.multiply_adds,
          .blocks = std::vector<BlockWork>(c.layers, block),
          .ends = ends,
          .heads = c.heads,
          .key_value_heads = c.heads};
}

namespace {

void check_vit_config(const VitConfig& c) {
  COURSE_CHECK(c.image > 0 && c.patch > 0 && c.layers > 0 && c.heads > 0 && c.channels > 0 &&
                   c.in_channels > 0 && c.classes > 0,
               c.name, ": a size is not positive");
  COURSE_CHECK(c.image % c.patch == 0, c.name, ": its ", c.patch, "-px patches do not tile a ",
               c.image, "-px image");
  COURSE_CHECK(c.channels % c.heads == 0, c.name, ": ", c.channels, " channels do not split into ",
               c.heads, " heads");
}

ModulePtr vit_stem(const VitConfig& c, std::mt19937& rng, Device device) {
  auto patch_embed = std::make_unique<Sequential>();
  patch_embed->add(std::make_unique<Conv2d>(c.in_channels, c.channels, c.patch,
                                            Conv2dShape{.stride = c.patch}, rng, device),
                   "proj");
  patch_embed->add(std::make_unique<PatchTokens>(c.channels, device), "tokens");
  auto stem = std::make_unique<Sequential>();
  stem->add(std::move(patch_embed), "patch_embed");
  stem->add(std::make_unique<ClassToken>(c.patches(), c.channels, rng, device), "embed");
  return stem;
}

ModulePtr vit_head(const VitConfig& c, std::mt19937& rng, Device device) {
  auto head = std::make_unique<Sequential>();
  head->add(std::make_unique<FirstTokenPool>(), "pool");
  head->add(std::make_unique<LayerNorm>(c.channels, device), "norm");
  head->add(std::make_unique<Linear>(normal({c.classes, c.channels}, 0.02f, rng, device),
                                     zeros({c.classes}, DType::kF32, device)),
            "fc");
  return head;
}

}  // namespace

ModelPieces vit_pieces(const VitConfig& c) {
  check_vit_config(c);
  ModelPieces pieces{
      .sample = {c.in_channels, c.image, c.image},
      .stem = {"stem", [c](std::mt19937& rng, Device device) { return vit_stem(c, rng, device); }},
      .blocks = {},
      .head = {"head", [c](std::mt19937& rng, Device device) { return vit_head(c, rng, device); }}};
  const BlockShape shape{DecoderFamily::kGpt2,
                         c.channels,
                         {c.heads, c.heads, c.channels / c.heads, /*rope_theta=*/0.0f},
                         c.mlp_width(),
                         c.layers,
                         /*causal=*/false};
  for (int64_t l = 0; l < c.layers; ++l) {
    pieces.blocks.push_back({"block", [shape](std::mt19937& rng, Device device) {
                               return std::make_unique<TransformerBlock>(shape, rng, device);
                             }});
  }
  return pieces;
}

ModulePtr make_vit(const VitConfig& c, std::mt19937& rng, Device device) {
  return assemble(vit_pieces(c), rng, device);
}

VitConfig vit_config(const ModelConfig& config) {
  return sized_preset(vit_preset(config.name), config);
}

const ModelFamilySpec& vit_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "ViT", .images = true, .transformer_blocks = true, .in_pieces = true},
      .names = [] { return preset_names(vit_presets()); },
      .min_image_size = [](const std::string& name) { return vit_preset(name).patch; },
      .pieces = [](const ModelConfig& config) { return vit_pieces(vit_config(config)); },
      .own_config = [](const std::string& name) { return own_model_config(vit_preset(name)); },
      .parameter_count =
          [](const ModelConfig& config) { return vit_parameter_count(vit_config(config)); },
      .workload = [](const ModelConfig& config) { return vit_workload(vit_config(config)); },
      .shape_json =
          [](const ModelConfig& config) {
            const VitConfig c = vit_config(config);
            const nlohmann::json shape = {{"image", c.image},
                                          {"patch", c.patch},
                                          {"layers", c.layers},
                                          {"heads", c.heads},
                                          {"channels", c.channels},
                                          {"hidden", c.mlp_width()},
                                          {"in_channels", c.in_channels},
                                          {"classes", c.classes}};
            return nlohmann::json{{"vit", shape}}.dump();
          }};
  return spec;
}

namespace {

// This family in the registry (model_registry.h), at its place in --model's listing.
[[maybe_unused]] const bool kVitFamilyRegistered = register_model_family(vit_family(), 4);

}  // namespace

}  // namespace course::nn
