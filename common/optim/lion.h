// Lion (EvoLved Sign Momentum, Chen et al. 2023): SGD-like memory (one momentum buffer) but
// every element moves by exactly lr per step, in the sign of beta1 m + (1 - beta1) g; weight
// decay is decoupled as in AdamW. Its learning rate is typically 3-10x smaller than AdamW's
// and its weight decay that much larger (the same lr * wd product). Defaults: lr 1e-4,
// betas (0.9, 0.99), weight decay 0.
#pragma once

#include "common/optim/optimizer.h"

namespace course::optim {

struct LionOptions {
  float lr = 1e-4f;
  float beta1 = 0.9f, beta2 = 0.99f;
  float weight_decay = 0.0f;
};

class Lion : public Optimizer {
 public:
  Lion(std::vector<std::pair<std::string, nn::Parameter*>> params, const LionOptions& options);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override { return {lr_}; }
  LionOptions options_;
  std::vector<Tensor> momentum_;
};

}  // namespace course::optim
