// Text generation from a language model: sample the next token from the last position's logits
// (sampling.h: temperature, top-k, top-p), append it, repeat (the context slides once it is
// full). No cache of keys and values: each token costs a forward pass over the window, which is
// what lets it go past the context; generation_engine.h decodes within the context, one
// position per token.
#pragma once

#include <cstdint>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/models/gpt/sampling.h"

namespace course::nn {

struct GenerateOptions {
  int64_t tokens = 200;  // to generate
  SamplingOptions sampling{.temperature = 0.8f};
  uint32_t seed = 0;
};

// Runs `model` (a Gpt of `config` on `device`, or a wrapper of one such as sharded data
// parallelism's) in evaluation mode and restores its mode; `prompt` must not be empty.
std::vector<int32_t> generate(Module& model, const GptConfig& config, Device device,
                              std::vector<int32_t> prompt, const GenerateOptions& options);

}  // namespace course::nn
