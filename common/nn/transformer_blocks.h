// The transformer block the models are built of, x + attention(norm(x)), then
// x + mlp(norm(x)) (pre-normalisation, two named residual branches), in two families:
//   GPT-2's (and the Vision Transformer's): LayerNorm, multi-head attention on a fused q|k|v
//     projection (causal for a decoder, bidirectional for an encoder), a GELU MLP (the GELU in
//     the expansion's epilogue: nn/linear.h), biases;
//   Llama's: RMSNorm, grouped-query attention on rotary positions, a SwiGLU MLP (gate and up in
//     one projection), no biases.
// Weights Normal(0, 0.02) as GPT-2, the residual projections' scaled by 1/sqrt(2 layers). The
// normalisation and activation factories below are shared with the tensor-parallel cut of the
// same blocks (common/parallel/tensor_parallel/tensor_parallel_block.h), so both build the same
// layers.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/kernels/grouped_qkv.h"
#include "common/nn/linear.h"
#include "common/nn/module.h"
#include "common/nn/sequential.h"

namespace course::nn {

// The two kinds of block: GPT-2's, and Llama's (RMSNorm, rotary positions, grouped-query
// attention, a SwiGLU feed-forward, no biases).
enum class DecoderFamily { kGpt2, kLlama };

// A block's layers by their role, for code that rebuilds a block from them (tensor
// parallelism) instead of looking them up by name.
struct GptBlockLayers {
  Module* attention_norm;        // LayerNorm or RMSNorm
  Linear* qkv;                   // ((H + 2 G) D, C), q | k | v
  Linear* attention_projection;  // (C, H D)
  Module* feed_forward_norm;     // LayerNorm or RMSNorm
  Linear* expansion;             // (F, C) with GELU after its bias, or SwiGLU's (2F, C) gate | up
  Linear* feed_forward_projection;  // (C, F)
};

// The layers' names in each family: GPT-2's as nanoGPT's (ln_1, c_attn, c_proj, ln_2, c_fc,
// gelu, c_proj), Llama's as Meta's (attention_norm, wqkv, wo, ffn_norm, w13, swiglu, w2).
struct BlockNames {
  std::string attention_norm, qkv, projection, feed_forward_norm, expansion, activation,
      feed_forward_projection;
};
const BlockNames& block_names(DecoderFamily family);

struct BlockShape {
  DecoderFamily family;
  int64_t channels;
  GroupedHeads heads;  // GPT-2: as many key/value heads as heads, no rotation
  int64_t hidden;      // the MLP's width F
  int64_t layers;      // of the model: scales the residual projections' initial weights
  bool causal;
};

// A block that knows its layers by role and its shape (what the tensor-parallel cut reads).
// Children: attention.<attention_norm>, attention.attn.{<qkv>, core, <projection>},
// feed_forward.<feed_forward_norm>, feed_forward.mlp.{<expansion>, <activation> (Llama's; GPT-2's
// is in its expansion), <feed_forward_projection>}.
class TransformerBlock : public Sequential {
 public:
  TransformerBlock(const BlockShape& shape, std::mt19937& rng, Device device);
  const GptBlockLayers& layers() const { return layers_; }
  const BlockShape& shape() const { return shape_; }

 private:
  BlockShape shape_;
  GptBlockLayers layers_{};
};

// The family's normalisation (ones, zeros) and activation (a layer of its own, as the
// tensor-parallel cut and Llama's block place it).
ModulePtr make_norm(DecoderFamily family, int64_t channels, Device device);
ModulePtr make_activation(DecoderFamily family);
// The expansion's packed parts: {F}, or SwiGLU's {F, F}.
std::vector<int64_t> expansion_parts(const BlockShape& shape);

}  // namespace course::nn
