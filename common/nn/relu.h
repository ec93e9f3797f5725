// ReLU layer (keeps its input for the backward mask).
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;

 private:
  Tensor input_;
};

}  // namespace course::nn
