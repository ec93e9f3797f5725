// The decoder of either family: GPT-2's and Llama's blocks, and the layers around them.
#include "common/models/gpt/gpt.h"

#include "common/nn/checkpointed.h"
#include "common/nn/init.h"

namespace course::nn {

namespace {

// The configuration, checked before any layer is built from it.
const GptConfig& checked(const GptConfig& config) {
  check_config(config);
  return config;
}

}  // namespace

Gpt::Gpt(const GptConfig& config, std::mt19937& rng, Device device, bool checkpoint_blocks)
    : config_(checked(config)),
      embedding_(config.vocabulary, config.llama() ? 0 : config.context, config.channels, rng,
                 device),
      checkpointed_blocks_(checkpoint_blocks) {
  for (int64_t l = 0; l < config.layers; ++l) {
    auto whole_block = std::make_unique<TransformerBlock>(block_shape(config), rng, device);
    block_layers_.push_back(whole_block->layers());
    ModulePtr block = std::move(whole_block);
    if (checkpoint_blocks) block = std::make_unique<Checkpointed>(std::move(block));
    blocks_.add(std::move(block));
  }
  final_norm_ = make_norm(config.family, config.channels, device);
  if (config.tied_head) {
    head_ = std::make_unique<TiedHead>(embedding_.wte);
  } else {
    head_ =
        std::make_unique<Linear>(normal({config.vocabulary, config.channels}, 0.02f, rng, device));
  }
}

std::vector<Module::Child> Gpt::children() {
  return {{"", &embedding_},
          {"h", &blocks_},
          {"ln_f", final_norm_.get()},
          {head_name(config_), head_.get()}};
}

Linear* Gpt::own_head() { return config_.tied_head ? nullptr : static_cast<Linear*>(head_.get()); }

// Child contexts: 0 embedding, 1 blocks, 2 final normalisation, 3 output layer.
Tensor Gpt::run_forward(const Tensor& tokens, Context& ctx) {
  Tensor h = embedding_.forward(tokens, ctx.child(0));
  h = blocks_.forward(h, ctx.child(1));
  h = final_norm_->forward(h, ctx.child(2));
  return head_->forward(h, ctx.child(3));
}

Tensor Gpt::run_backward(const Tensor& dlogits, Context& ctx) {
  Tensor g = head_->backward(dlogits, ctx.child(3));
  g = final_norm_->backward(g, ctx.child(2));
  g = blocks_.backward(g, ctx.child(1));
  return embedding_.backward(g, ctx.child(0));
}

}  // namespace course::nn
