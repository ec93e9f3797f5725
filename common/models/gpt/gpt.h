// A decoder-only language model of either family (gpt_config.h). GPT-2: token + position
// embedding, pre-LayerNorm transformer blocks (x + attn(ln_1(x)), then x + mlp(ln_2(x)), the
// MLP 4x wide with tanh GELU), a final LayerNorm and an output layer tied to the token
// embedding. Llama: token embedding only, the same outline with RMSNorm, grouped-query
// attention on rotary positions and a SwiGLU MLP, no biases, the output layer tied or its own.
// No dropout (as llm.c), so activation checkpointing is exact. Initialised as GPT-2:
// Normal(0, 0.02) weights, the residual projections' scaled by 1/sqrt(2 layers), zero biases.
//
// Parameter names: "wte.weight", "wpe.weight", "h.<l>.attention.ln_1.weight",
// "h.<l>.attention.attn.c_attn.weight", ".attn.c_proj", "h.<l>.feed_forward.ln_2",
// ".mlp.c_fc", ".mlp.c_proj", "ln_f.weight" (nanoGPT's, with the branch named). Llama's:
// ".attention.attention_norm", ".attn.wqkv", ".attn.wo", ".feed_forward.ffn_norm", ".mlp.w13",
// ".mlp.w2", "ln_f.weight", and "lm_head.weight" when untied.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "common/models/gpt/gpt_parts.h"
#include "common/models/gpt/tied_head.h"
#include "common/nn/embedding.h"
#include "common/nn/layer_norm.h"
#include "common/nn/linear.h"
#include "common/nn/sequential.h"
#include "common/nn/transformer_blocks.h"

namespace course::nn {

class Gpt : public GptParts {
 public:
  // `checkpoint_blocks`: each block recomputes its activations in backward (checkpointed.h).
  Gpt(const GptConfig& config, std::mt19937& rng, Device device, bool checkpoint_blocks = false);

  std::vector<Child> children() override;
  const GptConfig& config() const override { return config_; }
  Sequential& blocks() override { return blocks_; }
  // The layers around the blocks, for a pipeline's stages (gpt_stage.h).
  Embedding& embedding() override { return embedding_; }
  Parameter& token_table() override { return embedding_.wte; }
  Module& final_norm() override { return *final_norm_; }
  Module& head() override { return *head_; }
  // The untied output layer (V, C), or nullptr when tied to the token table.
  Linear* own_head();
  // Every block's layers by role, first to last; whether each block recomputes its activations.
  const std::vector<GptBlockLayers>& block_layers() const { return block_layers_; }
  bool checkpointed_blocks() const { return checkpointed_blocks_; }

 protected:
  // tokens (B, T) i32 -> logits (B, T, V)
  Tensor run_forward(const Tensor& tokens, Context& ctx) override;
  Tensor run_backward(const Tensor& dlogits, Context& ctx) override;

 private:
  GptConfig config_;
  Embedding embedding_;
  Sequential blocks_;
  ModulePtr final_norm_;  // LayerNorm or RMSNorm
  ModulePtr head_;        // TiedHead, or a Linear of its own
  std::vector<GptBlockLayers> block_layers_;
  bool checkpointed_blocks_;
};

}  // namespace course::nn
