// Dropout: in training, zeroes each element with probability p and scales the others by
// 1 / (1 - p) (inverted dropout, as PyTorch); the identity in evaluation. Masks come from a
// seeded generator, so runs repeat exactly.
#pragma once

#include <cstdint>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p, uint32_t seed = 0);
  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  const Tensor& mask() const { return mask_; }  // the last training mask, scaled: 0 or 1/(1-p)

 private:
  float p_;
  std::mt19937 rng_;
  Tensor mask_;
};

}  // namespace course::nn
