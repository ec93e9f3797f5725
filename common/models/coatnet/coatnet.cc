// CoAtNet: presets, parameter count and the model.
#include "common/models/coatnet/coatnet.h"

#include <nlohmann/json.hpp>
#include <string>

#include "common/core/error.h"
#include "common/kernels/relative_position.h"
#include "common/models/coatnet/coatnet_blocks.h"
#include "common/models/presets.h"
#include "common/nn/vit_tokens.h"

namespace course::nn {

namespace {

using S = CoatnetStage;

// CoAtNet-0..5: two MBConv stages and two transformer stages; 6 and 7: a third MBConv stage and
// a transformer stage at its resolution.
CoatnetConfig four_stages(std::string name, int64_t stem, std::vector<int64_t> depths,
                          std::vector<int64_t> widths) {
  return {std::move(name),
          224,
          stem,
          {S{false, depths[0], widths[0]}, S{false, depths[1], widths[1]},
           S{true, depths[2], widths[2]}, S{true, depths[3], widths[3]}}};
}

CoatnetConfig five_stages(std::string name, int64_t stem, std::vector<int64_t> widths) {
  return {std::move(name),
          224,
          stem,
          {S{false, 2, widths[0]}, S{false, 4, widths[1]}, S{false, 8, widths[2]},
           S{true, 42, widths[3], false}, S{true, 2, widths[4]}}};
}

// The map's side after the stem's stride-2 convolution (padding 1).
int64_t after_stem(int64_t side) { return (side - 1) / 2 + 1; }

// Walks the stages' blocks with the grid each one sees: f(stage, in, out, downsample, side).
template <class F>
void for_each_block(const CoatnetConfig& c, F f) {
  int64_t side = after_stem(c.image), width = c.stem;
  for (const CoatnetStage& stage : c.stages) {
    for (int64_t b = 0; b < stage.depth; ++b) {
      const bool downsample = b == 0 && stage.downsample;
      f(stage, BlockWidths{width, stage.channels, downsample}, side);
      if (downsample) side /= 2;
      width = stage.channels;
    }
  }
}

int64_t mbconv_parameters(const BlockWidths& b) {
  const int64_t hidden = 4 * b.out, reduced = std::max<int64_t>(1, b.in / 4);
  const int64_t squeeze = 2 * hidden * reduced + reduced + hidden;
  const int64_t shortcut = b.in != b.out ? b.in * b.out + b.out : 0;
  return 2 * b.in + b.in * hidden + 2 * hidden + 9 * hidden + 2 * hidden + squeeze +
         hidden * b.out + b.out + shortcut;
}

int64_t transformer_parameters(const BlockWidths& b, int64_t side, int64_t head_dim) {
  const int64_t grid = b.downsample ? side / 2 : side;
  const int64_t attention = 2 * b.in + 3 * b.out * (b.in + 1) + b.out * (b.out + 1) +
                            b.out / head_dim * relative_offsets(grid, grid);
  const int64_t shortcut = b.in != b.out ? b.in * b.out + b.out : 0;
  const int64_t mlp = 2 * b.out + 8 * b.out * b.out + 5 * b.out;
  return attention + shortcut + mlp;
}

// The first reason the config cannot be built, or "".
std::string config_problem(const CoatnetConfig& c) {
  if (c.image <= 0 || c.stem <= 0 || c.in_channels <= 0 || c.classes <= 0 || c.head_dim <= 0 ||
      c.stages.empty()) {
    return c.name + ": a size is not positive";
  }
  for (size_t s = 0; s < c.stages.size(); ++s) {
    if (c.stages[s].depth <= 0 || c.stages[s].channels <= 0) {
      return c.name + ": a stage without blocks or width";
    }
    if (s > 0 && !c.stages[s].attention && c.stages[s - 1].attention) {
      return c.name + ": an MBConv stage after a transformer stage";
    }
  }
  if (!c.stages.back().attention) return c.name + ": CoAtNet ends in transformer stages";
  std::string problem;
  for_each_block(c, [&](const CoatnetStage& stage, const BlockWidths& b, int64_t side) {
    if (!problem.empty()) return;
    const std::string image = " (a " + std::to_string(c.image) + "-px image)";
    const std::string map = std::to_string(side) + "x" + std::to_string(side) + " map";
    if (b.downsample && side < 2) {
      problem = c.name + ": the image is too small for its stages: a " + map + " cannot be halved" +
                image;
    } else if (!stage.attention && b.downsample && side % 2 != 0) {
      problem = c.name + ": an MBConv stage halves a " + map + ", which needs an even side" + image;
    } else if (stage.attention && b.out % c.head_dim != 0) {
      problem = c.name + ": a transformer stage of " + std::to_string(b.out) +
                " channels does not split into heads of " + std::to_string(c.head_dim);
    }
  });
  return problem;
}

void check_config(const CoatnetConfig& c) {
  const std::string problem = config_problem(c);
  COURSE_CHECK(problem.empty(), problem);
}

}  // namespace

const std::vector<CoatnetConfig>& coatnet_presets() {
  static const std::vector<CoatnetConfig> presets = {
      {"coatnet-micro",
       28,
       16,
       {S{false, 1, 32}, S{false, 1, 48, false}, S{true, 2, 64, false}, S{true, 1, 96}},
       1,
       10},
      four_stages("coatnet-0", 64, {2, 3, 5, 2}, {96, 192, 384, 768}),
      four_stages("coatnet-1", 64, {2, 6, 14, 2}, {96, 192, 384, 768}),
      four_stages("coatnet-2", 128, {2, 6, 14, 2}, {128, 256, 512, 1024}),
      four_stages("coatnet-3", 192, {2, 6, 14, 2}, {192, 384, 768, 1536}),
      four_stages("coatnet-4", 192, {2, 12, 28, 2}, {192, 384, 768, 1536}),
      four_stages("coatnet-5", 192, {2, 12, 28, 2}, {256, 512, 1280, 2048}),
      five_stages("coatnet-6", 192, {192, 384, 768, 1536, 2048}),
      five_stages("coatnet-7", 192, {256, 512, 1024, 2048, 3072}),
  };
  return presets;
}

CoatnetConfig coatnet_preset(const std::string& name) {
  return find_preset(coatnet_presets(), name, "CoAtNet");
}

int64_t coatnet_parameter_count(const CoatnetConfig& c) {
  check_config(c);
  int64_t total = c.in_channels * 9 * c.stem + 2 * c.stem + 9 * c.stem * c.stem + c.stem;
  for_each_block(c, [&](const CoatnetStage& stage, const BlockWidths& b, int64_t side) {
    total += stage.attention ? transformer_parameters(b, side, c.head_dim) : mbconv_parameters(b);
  });
  const int64_t width = c.stages.back().channels;
  return total + 2 * width + width * width + width + width * c.classes + c.classes;
}

int64_t coatnet_min_image(const CoatnetConfig& config) {
  CoatnetConfig c = config;
  for (c.image = 1; c.image <= 4096; ++c.image) {
    if (config_problem(c).empty()) return c.image;
  }
  COURSE_FAIL(c.name, " takes no image up to 4096 px");
}

ModelPieces coatnet_pieces(const CoatnetConfig& c) {
  check_config(c);
  ModelPieces pieces{.sample = {c.in_channels, c.image, c.image},
                     .stem = {"stem",
                              [c](std::mt19937& rng, Device device) {
                                return coatnet_stem(c.in_channels, c.stem, rng, device);
                              }},
                     .blocks = {},
                     .head = {"head", [c](std::mt19937& rng, Device device) {
                                return coatnet_head(c.stages.back().channels, c.classes, rng,
                                                    device);
                              }}};
  bool in_tokens = false;
  for_each_block(c, [&](const CoatnetStage& s, const BlockWidths& b, int64_t side) {
    if (s.attention && !in_tokens) {
      pieces.blocks.push_back({"to_tokens", [b](std::mt19937&, Device device) -> ModulePtr {
                                 return std::make_unique<PatchTokens>(b.in, device, false);
                               }});
      in_tokens = true;
    }
    const std::string key = std::string(s.attention ? "transformer " : "mbconv ") +
                            std::to_string(b.in) + "->" + std::to_string(b.out) + " at " +
                            std::to_string(side) + (b.downsample ? ", halved" : "");
    const int64_t head_dim = c.head_dim;
    pieces.blocks.push_back({key, [s, b, side, head_dim](std::mt19937& rng, Device device) {
                               return s.attention ? relative_transformer_block(
                                                        b, side, side, head_dim, rng, device)
                                                  : mbconv_block(b, rng, device);
                             }});
  });
  return pieces;
}

ModulePtr make_coatnet(const CoatnetConfig& c, std::mt19937& rng, Device device) {
  return assemble(coatnet_pieces(c), rng, device);
}

CoatnetConfig coatnet_config(const ModelConfig& config) {
  return sized_preset(coatnet_preset(config.name), config);
}

const ModelFamilySpec& coatnet_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "CoAtNet", .images = true, .transformer_blocks = false, .in_pieces = true},
      .names = [] { return preset_names(coatnet_presets()); },
      .min_image_size =
          [](const std::string& name) { return coatnet_min_image(coatnet_preset(name)); },
      .pieces = [](const ModelConfig& config) { return coatnet_pieces(coatnet_config(config)); },
      .own_config = [](const std::string& name) { return own_model_config(coatnet_preset(name)); },
      .parameter_count =
          [](const ModelConfig& config) { return coatnet_parameter_count(coatnet_config(config)); },
      .shape_json =
          [](const ModelConfig& config) {
            const CoatnetConfig c = coatnet_config(config);
            nlohmann::json stages = nlohmann::json::array();
            for (const CoatnetStage& stage : c.stages) {
              stages.push_back({stage.attention, stage.depth, stage.channels, stage.downsample});
            }
            const nlohmann::json shape = {{"image", c.image},     {"stem", c.stem},
                                          {"stages", stages},     {"in_channels", c.in_channels},
                                          {"classes", c.classes}, {"head_dim", c.head_dim}};
            return nlohmann::json{{"coatnet", shape}}.dump();
          }};
  return spec;
}

namespace {

// This family in the registry (model_registry.h), at its place in --model's listing.
[[maybe_unused]] const bool kCoatnetFamilyRegistered = register_model_family(coatnet_family(), 5);

}  // namespace

}  // namespace course::nn
