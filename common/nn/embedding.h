// Token and position embedding, a GPT's input layer: (B, T) i32 tokens -> (B, T, C) f32,
// y[b, t] = wte[token] + wpe[t]; a model with rotary positions (Llama) has no position table. Its
// backward takes dy and returns no input gradient (tokens have none): an undefined tensor.
#pragma once

#include <optional>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

class Embedding : public Module {
 public:
  // Normal(0, 0.02) tables, as GPT-2; `context` 0: no position table.
  Embedding(int64_t vocabulary, int64_t context, int64_t channels, std::mt19937& rng,
            Device device);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter wte;                 // (V, C), tied to the output layer in a GPT
  std::optional<Parameter> wpe;  // (context, C)

 protected:
  Tensor run_forward(const Tensor& tokens, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
};

}  // namespace course::nn
