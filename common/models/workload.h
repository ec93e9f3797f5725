// What a model costs per sample (a language model's window of s tokens, or one image), as the
// throughput model (common/parallel/planning/throughput_model.h) reads it: its parameters, its
// forward's multiply-adds, and per block what it hands the next one (sent between pipeline
// stages, all-reduced by tensor parallelism) and what it keeps for backward in bf16: the part
// every tensor-parallel rank keeps whole and the part cut over them. A family with a closed form
// gives it in its spec (family_spec.h: the ViT's); the others are measured piece by piece
// (common/parallel/planning/workload.h).
//
// Transformers in closed form, after Korthikanti et al. ("Reducing Activation Recomputation in
// Large Transformer Models", 2022): a block of width h, a heads, s tokens keeps
// s h (10 + (8 + mlp) / t + 5 a s / (h t)) bytes on each of t ranks, mlp the bf16 values its MLP
// saves per token and channel (16 for GPT-2's 4h GELU); the multiply-adds are each weight matrix
// once per token plus attention's 2 s^2 h a block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course::nn {

// Bytes of a bf16 value: the activations, gradients and weights the model counts (as
// Korthikanti et al. do).
inline constexpr double kBf16Bytes = 2;

// One block's figures per sample.
struct BlockWork {
  double output_elements = 0;    // handed to the next block
  double saved_whole_bytes = 0;  // kept for backward on every tensor-parallel rank
  double saved_cut_bytes = 0;    // kept for backward, divided over the tensor-parallel ranks
};

struct Workload {
  std::string name;
  std::string sample;  // "sequences of 64 tokens", "images of 224 px"
  double parameters = 0;
  double multiply_adds = 0;  // per sample, the whole model's forward
  std::vector<BlockWork> blocks;
  BlockWork ends;  // what the first and last parts keep (embedding, logits), together
  // The attention heads tensor parallelism splits (query, key/value); 0: blocks not cut.
  int64_t heads = 0, key_value_heads = 0;
  // A language model's window, which context parallelism cuts; 0: samples are not cut.
  int64_t sequence = 0;
};

// A transformer block's figures (Korthikanti et al.) at s tokens of width h, a heads and an MLP
// of `mlp_expansion` outputs (its first matrix) into `mlp_width`.
BlockWork transformer_block_work(double s, double h, double a, double mlp_expansion,
                                 double mlp_width);

}  // namespace course::nn
