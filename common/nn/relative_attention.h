// Self-attention with a relative position bias over an h x w token grid (CoAtNet's transformer
// stages, Dai et al. 2021, eq. 3): bidirectional multi-head attention on a packed (B, h w, 3C)
// q|k|v input whose scores get a learned scalar per head and 2-D offset between query and key
// (common/kernels/relative_position.h). The q|k|v and output projections are Linear layers around
// it, as around SelfAttention. Parameter name: relative_position_table (heads, (2h-1)(2w-1)).
#pragma once

#include <random>

#include "common/nn/module.h"

namespace course::nn {

class RelativePositionAttention : public Module {
 public:
  // A Normal(0, 0.02) table.
  RelativePositionAttention(int64_t heads, int64_t h, int64_t w, std::mt19937& rng, Device device);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter table;

 protected:
  Tensor run_forward(const Tensor& qkv, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  int64_t heads_, h_, w_;
};

}  // namespace course::nn
