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
// once per token plus attention's 2 s^2 h a block. Its memory-bound operations move, per token,
// 22 h bytes whole (two layer norms reading and writing bf16, two fused bias-dropout-residual adds
// reading two values, writing one and a mask byte) and, cut, 4 bytes per MLP output (the fused
// bias and GELU) and 9 per attention score (the fused scale-mask-softmax reading and writing,
// the dropout reading, writing and its mask byte), as Megatron-LM's fused kernels do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course::nn {

// Bytes of a bf16 value: the activations, gradients and weights the model counts (as
// Korthikanti et al. do).
inline constexpr double kBf16Bytes = 2;

// A matrix product of a block, per sample: `rows` x `columns` outputs over `depth`, `count` of
// them side by side (attention's heads), and which of its sizes tensor parallelism cuts.
struct MatrixProduct {
  enum class Cut { kNone, kColumns, kDepth, kCount };
  double rows = 0, columns = 0, depth = 0, count = 1;
  Cut cut = Cut::kNone;
};

// Their multiply-adds: rows x columns x depth, count times each.
double multiply_adds(const std::vector<MatrixProduct>& products);

// One block's figures per sample.
struct BlockWork {
  double output_elements = 0;           // handed to the next block
  double saved_whole_bytes = 0;         // kept for backward on every tensor-parallel rank
  double saved_cut_bytes = 0;           // kept for backward, divided over the tensor-parallel ranks
  double multiply_adds = 0;             // its forward's (its products' when they are listed)
  std::vector<MatrixProduct> products;  // their shapes, where the family knows them
  // The forward's memory-bound operations (norms, activations, softmax, dropout, residual adds):
  // the bytes they read and write, whole on every tensor-parallel rank and cut over them.
  double elementwise_whole_bytes = 0, elementwise_cut_bytes = 0;
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

// A transformer block's figures (Korthikanti et al.) at s tokens of width h, a heads (g of keys
// and values) and an MLP of `mlp_expansion` outputs (its first matrix) into `mlp_width`.
struct TransformerShape {
  double tokens, width, heads, key_value_heads, mlp_expansion, mlp_width;
};
BlockWork transformer_block_work(const TransformerShape& shape);

}  // namespace course::nn
