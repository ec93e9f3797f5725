// A GPT as a staged model (staged_model.h): its first part the token and position embeddings,
// its blocks, its last part the final norm and the output layer, over a GPT's parts (the whole
// Gpt, or one cut over tensor-parallel ranks). A stage (GptStage) is a view: the model owns the
// layers, and parameter names are the model's ("h.3.attention.ln_1.weight").
//
// A tied output layer reads the token embedding's table. A last stage without the embedding
// trains its own copy of the table (every rank builds the whole Gpt from one seed, so the copies
// start equal); the pipeline adds the two copies' gradients so they stay equal (Megatron-LM's
// embedding group).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/models/gpt/gpt_parts.h"
#include "common/nn/module_chain.h"
#include "common/nn/staged_model.h"

namespace course::nn {

class GptStage : public ModuleChain {
 public:
  // First stage: tokens (B, T) i32 in; else the previous stage's (B, T, C). Last stage: logits
  // (B, T, V) out; else (B, T, C) for the next stage.
  GptStage(GptParts& gpt, StageBounds bounds);

 protected:
  void collect(const std::string& prefix, ModuleState& state) override;

 private:
  GptParts& gpt_;
  StageBounds bounds_;
};

class GptStages : public StagedModel {
 public:
  explicit GptStages(GptParts& gpt) : gpt_(gpt) {}

  int64_t blocks() override { return gpt_.config().layers; }
  std::unique_ptr<Module> stage(const StageBounds& bounds) override {
    return std::make_unique<GptStage>(gpt_, bounds);
  }
  PartCosts parameters(int stages) override;
  PartCosts multiply_adds() override;
  // (B, T, C) for tokens (B, T)
  Tensor empty_activation(int64_t block, const Tensor& input) override;
  Parameter* shared_by_ends() override {
    return gpt_.config().tied_head ? &gpt_.token_table() : nullptr;
  }

 private:
  GptParts& gpt_;
};

}  // namespace course::nn
