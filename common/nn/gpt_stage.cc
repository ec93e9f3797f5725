// A GPT pipeline stage over the layers of a whole Gpt.
#include "common/nn/gpt_stage.h"

namespace course::nn {

GptStage::GptStage(GptParts& gpt, StageBounds bounds) : gpt_(gpt), bounds_(bounds) {
  const std::vector<Child> blocks = gpt.blocks().children();
  COURSE_CHECK(bounds.first_block >= 0 && bounds.first_block <= bounds.end_block &&
                   bounds.end_block <= static_cast<int64_t>(blocks.size()),
               "a stage of blocks [", bounds.first_block, ", ", bounds.end_block, ") of a ",
               blocks.size(), "-block GPT");
  if (bounds.embedding) layers_.push_back({"", &gpt.embedding()});
  for (int64_t b = bounds.first_block; b < bounds.end_block; ++b) {
    layers_.push_back({"h." + blocks[b].name, blocks[b].module});
  }
  if (bounds.head) {
    layers_.push_back({"ln_f", &gpt.final_norm()});
    layers_.push_back({head_name(gpt.config()), &gpt.head()});
  }
}

std::vector<Module::Child> GptStage::children() { return layers_; }

Parameter* GptStage::token_embedding() {
  const bool reads_table = bounds_.embedding || (bounds_.head && gpt_.config().tied_head);
  return reads_table ? &gpt_.token_table() : nullptr;
}

void GptStage::collect(const std::string& prefix, ModuleState& state) {
  Module::collect(prefix, state);
  // The output layer collects nothing (the embedding owns the table): the copy is this stage's.
  if (bounds_.head && !bounds_.embedding && gpt_.config().tied_head) {
    state.parameters.emplace_back(prefix + "wte.weight", &gpt_.token_table());
  }
}

Tensor GptStage::run_forward(const Tensor& x, Context& ctx) {
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) h = layers_[i].module->forward(h, ctx.child(i));
  return h;
}

Tensor GptStage::run_backward(const Tensor& dy, Context& ctx) {
  Tensor g = dy;
  for (size_t i = layers_.size(); i-- > 0;) g = layers_[i].module->backward(g, ctx.child(i));
  return g;
}

}  // namespace course::nn
