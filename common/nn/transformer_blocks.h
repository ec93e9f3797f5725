// The transformer blocks the models are built of, each x + attention(norm(x)), then
// x + mlp(norm(x)) (pre-normalisation, two named residual branches):
//   pre_norm_block  GPT-2's and the Vision Transformer's: LayerNorm, fused q|k|v attention
//                   (causal for a decoder, bidirectional for an encoder), a GELU MLP, biases;
//   llama_block     Llama's: RMSNorm, grouped-query attention on rotary positions, a SwiGLU
//                   MLP, no biases.
// Weights Normal(0, 0.02) as GPT-2, the residual projections' scaled by 1/sqrt(2 layers).
#pragma once

#include <cstdint>
#include <random>

#include "common/nn/gpt_config.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/module.h"

namespace course::nn {

// A pre-norm block's layers by their role, for code that rebuilds a block from them (tensor
// parallelism: common/parallel/tensor_parallel_gpt.h) instead of looking them up by name.
struct GptBlockLayers {
  LayerNorm* attention_norm;        // ln_1
  Linear* qkv;                      // attn.c_attn: (3C, C), q | k | v
  Linear* attention_projection;     // attn.c_proj: (C, C)
  LayerNorm* feed_forward_norm;     // ln_2
  Linear* expansion;                // mlp.c_fc: (hidden, C)
  Linear* feed_forward_projection;  // mlp.c_proj: (C, hidden)
};

struct PreNormBlockShape {
  int64_t channels, heads, hidden;
  int64_t layers;  // of the model: scales the residual projections' initial weights
  bool causal;
};

// Names as nanoGPT's: attention.ln_1, attention.attn.{c_attn, c_proj},
// feed_forward.ln_2, feed_forward.mlp.{c_fc, c_proj}. Its layers by role go to `layers`.
ModulePtr pre_norm_block(const PreNormBlockShape& shape, std::mt19937& rng, Device device,
                         GptBlockLayers& layers);

// wqkv packs Meta's wq, wk and wv (H + 2 G heads of D), w13 its w1 (gate) and w3 (up). Names:
// attention.attention_norm, attention.attn.{wqkv, wo}, feed_forward.ffn_norm,
// feed_forward.mlp.{w13, w2}.
ModulePtr llama_block(const GptConfig& config, std::mt19937& rng, Device device);

}  // namespace course::nn
