// Dropout: in training, zeroes each element with probability p and scales the others by
// 1 / (1 - p) (inverted dropout, as PyTorch); the identity in evaluation. Each call draws a new
// mask from the layer's seed and its count of calls (common/kernels/dropout.h: on the tensor's
// own device, the same on every device), so runs repeat exactly; backward draws the call's mask
// again instead of keeping it.
#pragma once

#include <cstdint>

#include "common/nn/module.h"

namespace course::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p, uint64_t seed = 0);

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  float p_;
  uint64_t seed_;
  uint64_t calls_ = 0;  // training calls so far: the next call's draw
  struct Saved {
    bool identity;  // evaluation, or p = 0
    uint64_t offset;
    MemoryFormat format;  // the mask follows x's storage order
  };
};

}  // namespace course::nn
