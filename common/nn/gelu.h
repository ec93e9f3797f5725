// GELU layer in its tanh form (GPT-2's feed-forward activation); keeps its input for backward.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class GELU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;

 private:
  Tensor input_;
};

}  // namespace course::nn
