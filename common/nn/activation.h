// Elementwise activations (ReLU, and GELU in its tanh form for transformers): each saves its
// input for the backward pass, which needs it for the derivative.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class Activation : public Module {
 public:
  using Forward = Tensor (*)(const Tensor& x);
  using Backward = Tensor (*)(const Tensor& dy, const Tensor& x);

 protected:
  Activation(const char* name, Forward forward, Backward backward);
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  const char* name_;
  Forward forward_;
  Backward backward_;
};

class ReLU : public Activation {
 public:
  ReLU();
};

class GELU : public Activation {
 public:
  GELU();
};

}  // namespace course::nn
