// How a self-attention layer attends its packed q|k|v (B, T, 3C) to (B, T, C): by default over
// the T rows it is given (common/kernels/attention.h); under context parallelism the rows are
// this rank's part of a longer sequence and a core that reaches the other ranks' keys takes its
// place (ring attention, common/parallel/context_parallel/ring_attention.h). What a core saves goes
// in the call's context, as a layer's does.
#pragma once

#include <cstdint>

#include "common/nn/context.h"
#include "common/nn/context_split.h"
#include "common/tensor/tensor.h"

namespace course::nn {

class AttentionCore {
 public:
  virtual ~AttentionCore() = default;
  virtual Tensor forward(const Tensor& qkv, int64_t heads, bool causal, Context& ctx) const = 0;
  virtual Tensor backward(const Tensor& dy, int64_t heads, bool causal, Context& ctx) const = 0;
  // Which part of the sequence the rows given are (rotary positions turn each row by its own
  // position): all of it, unless the core is one rank's of a context-parallel ring.
  virtual ContextSplit split() const { return {}; }
};

}  // namespace course::nn
