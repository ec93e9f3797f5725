// A decoder-only transformer's shape (blocks, heads, width, context, vocabulary) and family, and
// the named presets the labs, the memory estimate and the throughput model use. "GPT" here is
// the family name of generative pre-trained decoders: GPT-2 itself, and the Llama family, which
// changes the block (RMSNorm, rotary positions, grouped-query attention, a SwiGLU feed-forward,
// no biases) but not the model's outline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/models/family_spec.h"
#include "common/nn/transformer_blocks.h"

namespace course::nn {

struct GptConfig {
  std::string name;
  int64_t layers, heads, channels, context, vocabulary;
  DecoderFamily family = DecoderFamily::kGpt2;
  int64_t kv_heads = 0;     // Llama: key/value heads (grouped-query attention); 0: heads
  int64_t hidden = 0;       // the feed-forward's width; 0: 4 channels (GPT-2)
  bool tied_head = true;    // the output layer shares the token table (Llama 3.1 8B: no)
  float rope_theta = 0.0f;  // Llama: rotary base (500,000 in Llama 3); GPT-2: 0, learned positions

  bool llama() const { return family == DecoderFamily::kLlama; }
  int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t feed_forward_width() const { return hidden > 0 ? hidden : 4 * channels; }
  // The MLP's first projection's width: the activation's input (SwiGLU's gate | up: 2 F).
  int64_t feed_forward_expansion() const { return (llama() ? 2 : 1) * feed_forward_width(); }
  int64_t head_dim() const { return channels / heads; }
};

// GPT-2: gpt-tiny (byte-level, a fraction of a second per step on a laptop CPU), gpt-mini
// (byte-level, 10.8M parameters, nanoGPT's character model, for a GPU), the published GPT-2 sizes
// (124M, 350M, 774M, 1.5B) and the 1.3B configuration of the ZeRO and Megatron-LM papers'
// experiments. Llama: llama-tiny (byte-level, gpt-tiny's size class) and the published Llama 3.2
// 1B and 3B and Llama 3.1 8B (their pre-training context of 8,192 tokens).
const std::vector<GptConfig>& gpt_presets();
GptConfig gpt_preset(const std::string& name);  // throws listing the presets

// The parameters of each part of the model, from the configuration alone. A block: GPT-2's
// 12 C^2 + 13 C; Llama's (no biases, D = C / H) 2 C H D + 2 C G D + 3 C F + 2 C.
struct GptParameterParts {
  int64_t token_table;     // V C
  int64_t position_table;  // context C (GPT-2), 0 (Llama)
  int64_t block;           // each of the layers
  int64_t block_matrices;  // of which in weight matrices (the GEMMs' work): 12 C^2 in GPT-2
  int64_t final_norm;      // 2 C (LayerNorm), C (RMSNorm)
  int64_t output_layer;    // 0 when tied to the token table, else V C
};
GptParameterParts gpt_parameter_parts(const GptConfig& config);

// Their sum (a tied table counted once).
int64_t gpt_parameter_count(const GptConfig& config);

// Throws one message for a shape the model cannot take (heads not dividing the width,
// key/value heads not dividing the heads, an odd head size under rotary positions, a size not
// positive).
void check_config(const GptConfig& config);

// The shape of each of its blocks.
BlockShape block_shape(const GptConfig& config);

// The GPT-2 and Llama families' registrations (model_registry.cc): their presets' names; their
// decoders are built from a GptConfig (gpt.h).
const ModelFamilySpec& gpt2_family();
const ModelFamilySpec& llama_family();

}  // namespace course::nn
