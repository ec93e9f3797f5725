// One pipeline stage of a GPT: blocks [first_block, end_block) of a GPT's parts (the whole Gpt,
// or one cut over tensor-parallel ranks), after the embedding on the first stage and before the
// final LayerNorm and output layer on the last. A view: the model owns the layers, and parameter
// names are the model's ("h.3.attention.ln_1.weight").
//
// The output layer is tied to the token embedding. A last stage without the embedding trains its
// own copy of the table (every rank builds the whole Gpt from one seed, so the copies start
// equal); the pipeline adds the two copies' gradients so they stay equal (Megatron-LM's
// embedding group).
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/gpt_parts.h"

namespace course::nn {

struct StageBounds {
  int64_t first_block = 0, end_block = 0;
  bool embedding = false;  // the first stage: token and position embeddings
  bool head = false;       // the last stage: final LayerNorm and the output layer
};

class GptStage : public Module {
 public:
  GptStage(GptParts& gpt, StageBounds bounds);

  std::vector<Child> children() override;
  const StageBounds& bounds() const { return bounds_; }
  // The token embedding's table if this stage reads it (first stage) or computes the output
  // layer from it (last stage, a tied output layer), else nullptr.
  Parameter* token_embedding();

 protected:
  // First stage: tokens (B, T) i32; else the previous stage's (B, T, C). Last stage: logits
  // (B, T, V); else (B, T, C) for the next stage.
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  // Returns the gradient for the previous stage (undefined on the first).
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
  void collect(const std::string& prefix, ModuleState& state) override;

 private:
  GptParts& gpt_;
  StageBounds bounds_;
  std::vector<Child> layers_;  // in forward order
};

}  // namespace course::nn
