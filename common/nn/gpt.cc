// GPT model and presets.
#include "common/nn/gpt.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/checkpointed.h"
#include "common/nn/init.h"
#include "common/nn/linear.h"
#include "common/nn/residual_branch.h"
#include "common/nn/self_attention.h"

namespace course::nn {

namespace {

std::unique_ptr<Linear> gpt_linear(int64_t in, int64_t out, float std, std::mt19937& rng,
                                   Device device) {
  return std::make_unique<Linear>(normal({out, in}, std, rng, device),
                                  zeros({out}, DType::kF32, device));
}

// `module` added to `parent` as `name`; returns it as its own type.
template <class T>
T& add(Sequential& parent, std::unique_ptr<T> module, const std::string& name) {
  T& added = *module;
  parent.add(std::move(module), name);
  return added;
}

// A block, and its layers by role in `layers`.
ModulePtr transformer_block(const GptConfig& c, std::mt19937& rng, Device device,
                            GptBlockLayers& layers) {
  const float std = 0.02f, projection_std = 0.02f / std::sqrt(2.0f * c.layers);
  auto attention = std::make_unique<Sequential>();
  layers.attention_norm = &add(*attention, std::make_unique<LayerNorm>(c.channels, device), "ln_1");
  auto attn = std::make_unique<Sequential>();
  layers.qkv = &add(*attn, gpt_linear(c.channels, 3 * c.channels, std, rng, device), "c_attn");
  attn->add(std::make_unique<SelfAttention>(c.heads, /*causal=*/true), "core");
  layers.attention_projection =
      &add(*attn, gpt_linear(c.channels, c.channels, projection_std, rng, device), "c_proj");
  attention->add(std::move(attn), "attn");

  auto feed_forward = std::make_unique<Sequential>();
  layers.feed_forward_norm =
      &add(*feed_forward, std::make_unique<LayerNorm>(c.channels, device), "ln_2");
  auto mlp = std::make_unique<Sequential>();
  layers.expansion = &add(*mlp, gpt_linear(c.channels, 4 * c.channels, std, rng, device), "c_fc");
  mlp->add(std::make_unique<GELU>(), "gelu");
  layers.feed_forward_projection =
      &add(*mlp, gpt_linear(4 * c.channels, c.channels, projection_std, rng, device), "c_proj");
  feed_forward->add(std::move(mlp), "mlp");

  auto block = std::make_unique<Sequential>();
  block->add(std::make_unique<ResidualBranch>(std::move(attention)), "attention");
  block->add(std::make_unique<ResidualBranch>(std::move(feed_forward)), "feed_forward");
  return block;
}

}  // namespace

Gpt::Gpt(const GptConfig& config, std::mt19937& rng, Device device, bool checkpoint_blocks)
    : config_(config),
      embedding_(config.vocabulary, config.context, config.channels, rng, device),
      ln_f_(config.channels, device),
      head_(embedding_.wte),
      checkpointed_blocks_(checkpoint_blocks) {
  COURSE_CHECK(config.layers > 0 && config.heads > 0 && config.channels % config.heads == 0 &&
                   config.context > 0 && config.vocabulary > 0,
               "GPT config ", config.name, ": ", config.channels, " channels do not split into ",
               config.heads, " heads, or a size is not positive");
  for (int64_t l = 0; l < config.layers; ++l) {
    ModulePtr block = transformer_block(config, rng, device, block_layers_.emplace_back());
    if (checkpoint_blocks) block = std::make_unique<Checkpointed>(std::move(block));
    blocks_.add(std::move(block));
  }
}

std::vector<Module::Child> Gpt::children() {
  return {{"", &embedding_}, {"h", &blocks_}, {"ln_f", &ln_f_}, {"", &head_}};
}

// Child contexts: 0 embedding, 1 blocks, 2 final LayerNorm, 3 output layer.
Tensor Gpt::run_forward(const Tensor& tokens, Context& ctx) {
  Tensor h = embedding_.forward(tokens, ctx.child(0));
  h = blocks_.forward(h, ctx.child(1));
  h = ln_f_.forward(h, ctx.child(2));
  return head_.forward(h, ctx.child(3));
}

Tensor Gpt::run_backward(const Tensor& dlogits, Context& ctx) {
  Tensor g = head_.backward(dlogits, ctx.child(3));
  g = ln_f_.backward(g, ctx.child(2));
  g = blocks_.backward(g, ctx.child(1));
  return embedding_.backward(g, ctx.child(0));
}

}  // namespace course::nn
