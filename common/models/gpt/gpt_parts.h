// A GPT seen as its parts in forward order (token and position embedding, the blocks, the final
// LayerNorm, the output layer tied to the token table), so that a pipeline stage can run any
// run of them: the whole model (gpt.h) and the model cut over tensor-parallel ranks
// (common/parallel/tensor_parallel/tensor_parallel_gpt.h) are both GptParts, which is what lets
// pipeline parallelism run over tensor-parallel stages (3D parallelism).
#pragma once

#include "common/models/gpt/gpt_config.h"
#include "common/nn/module.h"
#include "common/nn/sequential.h"

namespace course::nn {

class GptParts : public Module {
 public:
  virtual const GptConfig& config() const = 0;
  // tokens (B, T) i32 -> (B, T, C)
  virtual Module& embedding() = 0;
  // The token table the embedding reads and the output layer is tied to (this rank's rows of it
  // when cut over the vocabulary).
  virtual Parameter& token_table() = 0;
  virtual Sequential& blocks() = 0;
  virtual Module& final_norm() = 0;
  // (B, T, C) -> logits (B, T, V)
  virtual Module& head() = 0;
};

// The output layer's name among the model's children: a tied one holds no parameter of its own
// (""), an untied one its "lm_head.weight".
inline const char* head_name(const GptConfig& config) { return config.tied_head ? "" : "lm_head"; }

}  // namespace course::nn
