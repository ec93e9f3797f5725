// A GPT's stages: views of its layers, and the figures its cuts are balanced by.
#include "common/models/gpt/gpt_stage.h"

namespace course::nn {

namespace {

std::vector<Module::Child> stage_layers(GptParts& gpt, const StageBounds& bounds) {
  const std::vector<Module::Child> blocks = gpt.blocks().children();
  COURSE_CHECK(bounds.first_block >= 0 && bounds.first_block <= bounds.end_block &&
                   bounds.end_block <= static_cast<int64_t>(blocks.size()),
               "a stage of blocks [", bounds.first_block, ", ", bounds.end_block, ") of a ",
               blocks.size(), "-block GPT");
  std::vector<Module::Child> layers;
  if (bounds.first) layers.push_back({"", &gpt.embedding()});
  for (int64_t b = bounds.first_block; b < bounds.end_block; ++b) {
    layers.push_back({"h." + blocks[b].name, blocks[b].module});
  }
  if (bounds.last) {
    layers.push_back({"ln_f", &gpt.final_norm()});
    layers.push_back({head_name(gpt.config()), &gpt.head()});
  }
  return layers;
}

}  // namespace

GptStage::GptStage(GptParts& gpt, StageBounds bounds)
    : ModuleChain(stage_layers(gpt, bounds)), gpt_(gpt), bounds_(bounds) {}

void GptStage::collect(const std::string& prefix, ModuleState& state) {
  Module::collect(prefix, state);
  // The output layer collects nothing (the embedding owns the table): the copy is this stage's.
  if (bounds_.last && !bounds_.first && gpt_.config().tied_head) {
    state.parameters.emplace_back(prefix + "wte.weight", &gpt_.token_table());
  }
}

PartCosts GptStages::parameters(int stages) {
  const GptConfig& c = gpt_.config();
  const GptParameterParts parts = gpt_parameter_parts(c);
  const int64_t tied_copy = c.tied_head && stages > 1 ? parts.token_table : 0;
  return {.first = static_cast<double>(parts.token_table + parts.position_table),
          .blocks = std::vector<double>(c.layers, static_cast<double>(parts.block)),
          .last = static_cast<double>(parts.final_norm + parts.output_layer + tied_copy)};
}

PartCosts GptStages::multiply_adds() {
  const GptConfig& c = gpt_.config();
  const GptParameterParts parts = gpt_parameter_parts(c);
  const double t = static_cast<double>(c.context), width = static_cast<double>(c.channels);
  // Each weight of the blocks' matrices once per position; scores and values T^2 C each.
  const double block = static_cast<double>(parts.block_matrices) * t + 2 * t * t * width;
  const double vocabulary = static_cast<double>(c.vocabulary);
  return {.first = 0,  // lookups
          .blocks = std::vector<double>(c.layers, block),
          .last = vocabulary * width * t};
}

Tensor GptStages::empty_activation(int64_t, const Tensor& input) {
  return Tensor::empty({input.size(0), input.size(1), gpt_.config().channels}, DType::kF32,
                       input.device());
}

}  // namespace course::nn
