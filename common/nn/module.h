// Module: a layer with explicit forward and backward passes (the llm.c / Caffe style: no tape).
//
// forward(x) computes the output and keeps what backward needs; backward(dy) returns dx and
// adds the parameter gradients into Parameter::grad (so gradients accumulate over micro-batches
// until zero_grad()). Parameters are f32 master weights; under autocast (common/nn/autocast.h)
// the compute-heavy layers run in f16/bf16 from copies of them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::nn {

struct Parameter {
  Tensor value;  // f32
  Tensor grad;   // f32, same shape, zero at creation

  explicit Parameter(Tensor value);
};

// Everything a module holds, with dotted names ("layer1.0.conv1.weight"), for optimizers,
// checkpoints and parity tests.
struct ModuleState {
  std::vector<std::pair<std::string, Parameter*>> parameters;
  std::vector<std::pair<std::string, Tensor*>> buffers;  // e.g. batch-norm running statistics
};

class Module {
 public:
  virtual ~Module() = default;

  virtual Tensor forward(const Tensor& x) = 0;
  virtual Tensor backward(const Tensor& dy) = 0;

  // Adds this module's parameters and buffers (and its children's) under `prefix`.
  virtual void collect(const std::string& prefix, ModuleState& state) {
    (void)prefix;
    (void)state;
  }
  virtual void set_training(bool training) { training_ = training; }

  // Called with each parameter as soon as its gradient is complete during backward (used by
  // data parallelism to start reducing it while the rest of the backward pass runs).
  using GradReadyHook = std::function<void(Parameter&)>;
  virtual void set_grad_ready_hook(const GradReadyHook& hook) { hook_ = hook; }

  ModuleState state();
  std::vector<Parameter*> parameters();
  void zero_grad();
  bool training() const { return training_; }

 protected:
  void grad_ready(Parameter& p) const {
    if (hook_) hook_(p);
  }

  bool training_ = true;
  GradReadyHook hook_;
};

using ModulePtr = std::unique_ptr<Module>;

}  // namespace course::nn
