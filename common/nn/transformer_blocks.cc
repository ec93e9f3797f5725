// The transformer block of both families.
#include "common/nn/transformer_blocks.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/init.h"
#include "common/nn/layer_norm.h"
#include "common/nn/residual_branch.h"
#include "common/nn/rms_norm.h"
#include "common/nn/self_attention.h"

namespace course::nn {

const BlockNames& block_names(DecoderFamily family) {
  static const BlockNames gpt2{"ln_1", "c_attn", "c_proj", "ln_2", "c_fc", "gelu", "c_proj"};
  static const BlockNames llama{"attention_norm", "wqkv", "wo", "ffn_norm", "w13", "swiglu", "w2"};
  return family == DecoderFamily::kLlama ? llama : gpt2;
}

ModulePtr make_norm(DecoderFamily family, int64_t channels, Device device) {
  if (family == DecoderFamily::kLlama) return std::make_unique<RmsNorm>(channels, device);
  return std::make_unique<LayerNorm>(channels, device);
}

ModulePtr make_activation(DecoderFamily family) {
  if (family == DecoderFamily::kLlama) return std::make_unique<SwiGLU>();
  return std::make_unique<GELU>();
}

std::vector<int64_t> expansion_parts(const BlockShape& s) {
  if (s.family == DecoderFamily::kLlama) return {s.hidden, s.hidden};
  return {s.hidden};
}

TransformerBlock::TransformerBlock(const BlockShape& s, std::mt19937& rng, Device device)
    : shape_(s) {
  const BlockNames& names = block_names(s.family);
  const float std = 0.02f, projection_std = 0.02f / std::sqrt(2.0f * s.layers);
  const auto linear = [&](int64_t in, int64_t out, float deviation,
                          LinearEpilogue epilogue = LinearEpilogue::kBias) {
    Tensor weight = normal({out, in}, deviation, rng, device);
    if (s.family == DecoderFamily::kLlama) return std::make_unique<Linear>(std::move(weight));
    return std::make_unique<Linear>(std::move(weight), zeros({out}, DType::kF32, device), epilogue);
  };
  const int64_t c = s.channels, attended = s.heads.heads * s.heads.head_dim;
  int64_t expanded = 0;
  for (int64_t part : expansion_parts(s)) expanded += part;

  auto attention = std::make_unique<Sequential>();
  layers_.attention_norm =
      &attention->add_named(make_norm(s.family, c, device), names.attention_norm);
  auto attn = std::make_unique<Sequential>();
  layers_.qkv = &attn->add_named(linear(c, s.heads.width(), std), names.qkv);
  attn->add(std::make_unique<SelfAttention>(s.heads, s.causal), "core");
  layers_.attention_projection =
      &attn->add_named(linear(attended, c, projection_std), names.projection);
  attention->add(std::move(attn), "attn");

  auto feed_forward = std::make_unique<Sequential>();
  layers_.feed_forward_norm =
      &feed_forward->add_named(make_norm(s.family, c, device), names.feed_forward_norm);
  auto mlp = std::make_unique<Sequential>();
  if (s.family == DecoderFamily::kLlama) {
    layers_.expansion = &mlp->add_named(linear(c, expanded, std), names.expansion);
    mlp->add(make_activation(s.family), names.activation);
  } else {  // GELU in the expansion's epilogue
    layers_.expansion =
        &mlp->add_named(linear(c, expanded, std, LinearEpilogue::kBiasGelu), names.expansion);
  }
  layers_.feed_forward_projection =
      &mlp->add_named(linear(s.hidden, c, projection_std), names.feed_forward_projection);
  feed_forward->add(std::move(mlp), "mlp");

  add(std::make_unique<ResidualBranch>(std::move(attention)), "attention");
  add(std::make_unique<ResidualBranch>(std::move(feed_forward)), "feed_forward");
}

}  // namespace course::nn
