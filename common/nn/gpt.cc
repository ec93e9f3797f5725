// The decoder of either family: GPT-2's and Llama's blocks, and the layers around them.
#include "common/nn/gpt.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/checkpointed.h"
#include "common/nn/init.h"
#include "common/nn/linear.h"
#include "common/nn/residual_branch.h"
#include "common/nn/rms_norm.h"
#include "common/nn/self_attention.h"

namespace course::nn {

namespace {

std::unique_ptr<Linear> gpt_linear(int64_t in, int64_t out, float std, std::mt19937& rng,
                                   Device device) {
  return std::make_unique<Linear>(normal({out, in}, std, rng, device),
                                  zeros({out}, DType::kF32, device));
}

std::unique_ptr<Linear> bias_free_linear(int64_t in, int64_t out, float std, std::mt19937& rng,
                                         Device device) {
  return std::make_unique<Linear>(normal({out, in}, std, rng, device));
}

// The block x + attention(x), then + feed_forward(.), each branch named.
ModulePtr residual_block(ModulePtr attention, ModulePtr feed_forward) {
  auto block = std::make_unique<Sequential>();
  block->add(std::make_unique<ResidualBranch>(std::move(attention)), "attention");
  block->add(std::make_unique<ResidualBranch>(std::move(feed_forward)), "feed_forward");
  return block;
}

// `module` added to `parent` as `name`; returns it as its own type.
template <class T>
T& add(Sequential& parent, std::unique_ptr<T> module, const std::string& name) {
  T& added = *module;
  parent.add(std::move(module), name);
  return added;
}

// A GPT-2 block, and its layers by role in `layers`.
ModulePtr gpt2_block(const GptConfig& c, std::mt19937& rng, Device device,
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
  return residual_block(std::move(attention), std::move(feed_forward));
}

// A Llama block: x + wo(attention(wqkv(rms(x)))), then x + w2(swiglu(w13(rms(x)))), no biases.
// wqkv packs Meta's wq, wk and wv (H + 2 G heads of D), w13 its w1 (gate) and w3 (up).
ModulePtr llama_block(const GptConfig& c, std::mt19937& rng, Device device) {
  const float std = 0.02f, projection_std = 0.02f / std::sqrt(2.0f * c.layers);
  const GroupedHeads heads{c.heads, c.key_value_heads(), c.head_dim(), c.rope_theta};
  const int64_t f = c.feed_forward_width();
  auto attention = std::make_unique<Sequential>();
  attention->add(std::make_unique<RmsNorm>(c.channels, device), "attention_norm");
  auto attn = std::make_unique<Sequential>();
  attn->add(bias_free_linear(c.channels, heads.width(), std, rng, device), "wqkv");
  attn->add(std::make_unique<SelfAttention>(heads, /*causal=*/true), "core");
  attn->add(bias_free_linear(c.channels, c.channels, projection_std, rng, device), "wo");
  attention->add(std::move(attn), "attn");

  auto feed_forward = std::make_unique<Sequential>();
  feed_forward->add(std::make_unique<RmsNorm>(c.channels, device), "ffn_norm");
  auto mlp = std::make_unique<Sequential>();
  mlp->add(bias_free_linear(c.channels, 2 * f, std, rng, device), "w13");
  mlp->add(std::make_unique<SwiGLU>(), "swiglu");
  mlp->add(bias_free_linear(f, c.channels, projection_std, rng, device), "w2");
  feed_forward->add(std::move(mlp), "mlp");
  return residual_block(std::move(attention), std::move(feed_forward));
}

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
    ModulePtr block = config.llama()
                          ? llama_block(config, rng, device)
                          : gpt2_block(config, rng, device, block_layers_.emplace_back());
    if (checkpoint_blocks) block = std::make_unique<Checkpointed>(std::move(block));
    blocks_.add(std::move(block));
  }
  if (config.llama()) {
    final_norm_ = std::make_unique<RmsNorm>(config.channels, device);
  } else {
    final_norm_ = std::make_unique<LayerNorm>(config.channels, device);
  }
  if (config.tied_head) {
    head_ = std::make_unique<TiedHead>(embedding_.wte);
  } else {
    head_ = bias_free_linear(config.channels, config.vocabulary, 0.02f, rng, device);
  }
}

std::vector<Module::Child> Gpt::children() {
  return {{"", &embedding_},
          {"h", &blocks_},
          {"ln_f", final_norm_.get()},
          {head_name(config_), head_.get()}};
}

LayerNorm& Gpt::final_layer_norm() {
  COURSE_CHECK(!config_.llama(), "model ", config_.name, " has no LayerNorm: it is a Llama");
  return static_cast<LayerNorm&>(*final_norm_);
}

const std::vector<GptBlockLayers>& Gpt::block_layers() const {
  COURSE_CHECK(!config_.llama(), "model ", config_.name, " has no GPT-2 blocks: it is a Llama");
  return block_layers_;
}

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
