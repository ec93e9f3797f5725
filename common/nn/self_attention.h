// Multi-head self-attention on a packed (B, T, 3C) q|k|v input -> (B, T, C): the parameter-free
// core of a transformer's attention (the q|k|v and output projections are Linear layers around
// it). Causal for a GPT, bidirectional for an encoder.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class SelfAttention : public Module {
 public:
  SelfAttention(int64_t heads, bool causal);

 protected:
  Tensor run_forward(const Tensor& qkv, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  int64_t heads_;
  bool causal_;
};

}  // namespace course::nn
