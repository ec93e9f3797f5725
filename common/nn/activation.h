// Elementwise activations (ReLU, GELU in its tanh form for GPT-2, ViT and CoAtNet, SiLU and
// Sigmoid for the squeeze-excitation, Tanh for CoAtNet's pre-logits, and Llama's gated SwiGLU,
// which halves the last dimension): each saves its input for the backward pass, which
// needs it for the derivative.
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

class SiLU : public Activation {
 public:
  SiLU();
};

class Sigmoid : public Activation {
 public:
  Sigmoid();
};

class Tanh : public Activation {
 public:
  Tanh();
};

// (..., 2F) gate | up -> silu(gate) up (..., F): put after one Linear of 2F outputs, it is
// Llama's w1 and w3 in one GEMM.
class SwiGLU : public Activation {
 public:
  SwiGLU();
};

}  // namespace course::nn
