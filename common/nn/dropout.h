// Dropout: in training, zeroes each element with probability p and scales the others by
// 1 / (1 - p) (inverted dropout, as PyTorch); the identity in evaluation. Masks come from a
// seeded generator, so runs repeat exactly; a call saves its scaled mask (0 or 1/(1-p)).
#pragma once

#include <cstdint>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p, uint32_t seed = 0);

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  float p_;
  std::mt19937 rng_;
};

}  // namespace course::nn
