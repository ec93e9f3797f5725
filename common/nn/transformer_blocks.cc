// The transformer blocks the models are built of.
#include "common/nn/transformer_blocks.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/init.h"
#include "common/nn/residual_branch.h"
#include "common/nn/rms_norm.h"
#include "common/nn/self_attention.h"
#include "common/nn/sequential.h"

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

}  // namespace

ModulePtr pre_norm_block(const PreNormBlockShape& c, std::mt19937& rng, Device device,
                         GptBlockLayers& layers) {
  const float std = 0.02f, projection_std = 0.02f / std::sqrt(2.0f * c.layers);
  auto attention = std::make_unique<Sequential>();
  layers.attention_norm = &add(*attention, std::make_unique<LayerNorm>(c.channels, device), "ln_1");
  auto attn = std::make_unique<Sequential>();
  layers.qkv = &add(*attn, gpt_linear(c.channels, 3 * c.channels, std, rng, device), "c_attn");
  attn->add(std::make_unique<SelfAttention>(c.heads, c.causal), "core");
  layers.attention_projection =
      &add(*attn, gpt_linear(c.channels, c.channels, projection_std, rng, device), "c_proj");
  attention->add(std::move(attn), "attn");

  auto feed_forward = std::make_unique<Sequential>();
  layers.feed_forward_norm =
      &add(*feed_forward, std::make_unique<LayerNorm>(c.channels, device), "ln_2");
  auto mlp = std::make_unique<Sequential>();
  layers.expansion = &add(*mlp, gpt_linear(c.channels, c.hidden, std, rng, device), "c_fc");
  mlp->add(std::make_unique<GELU>(), "gelu");
  layers.feed_forward_projection =
      &add(*mlp, gpt_linear(c.hidden, c.channels, projection_std, rng, device), "c_proj");
  feed_forward->add(std::move(mlp), "mlp");
  return residual_block(std::move(attention), std::move(feed_forward));
}

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

}  // namespace course::nn
