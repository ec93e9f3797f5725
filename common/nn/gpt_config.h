// A GPT's shape (blocks, heads, width, context, vocabulary) and the named presets the labs,
// the memory estimate and the throughput model use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course::nn {

struct GptConfig {
  std::string name;
  int64_t layers, heads, channels, context, vocabulary;
};

// gpt-tiny (byte-level, a fraction of a second per step on a laptop CPU), gpt-mini (byte-level,
// 10.8M parameters, nanoGPT's character model, for a GPU) and the published GPT-2 sizes
// (124M, 350M, 774M, 1.5B) plus the 1.3B configuration of the ZeRO and Megatron-LM papers'
// experiments, for memory estimates and GPUs.
const std::vector<GptConfig>& gpt_presets();
GptConfig gpt_preset(const std::string& name);  // throws listing the presets

// From the configuration alone (the tied weight counted once): V C + context C +
// layers (12 C^2 + 13 C) + 2 C.
int64_t gpt_parameter_count(const GptConfig& config);

}  // namespace course::nn
