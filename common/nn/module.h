// Module: a layer with explicit forward and backward passes (the llm.c / Caffe style: no tape).
//
// forward(x, ctx) computes the output and saves what backward needs in the call's Context;
// backward(dy, ctx) returns dx, adds the parameter gradients into Parameter::grad (so gradients
// accumulate over micro-batches until zero_grad()) and releases the context. Calls with their
// own contexts can be in flight together; forward(x) / backward(dy) use a context the module
// keeps, for the usual one-call-at-a-time step. Parameters are f32 master weights; under autocast
// (common/nn/autocast.h) the compute-heavy layers run in f16/bf16 from copies of them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/context.h"
#include "common/tensor/tensor.h"

namespace course::nn {

struct Parameter {
  Tensor value;  // f32; 16-bit while sharded mixed precision binds a compute copy
  Tensor grad;   // f32, same shape, zero at creation

  explicit Parameter(Tensor value);
  Parameter(Tensor value, Tensor grad);  // e.g. views of a shard of flat parameters

  // The value in f32 (itself, or an f32 copy of a 16-bit compute copy): what the kernels of
  // normalisations and biases read.
  Tensor f32_value() const;
};

// Everything a module holds, with dotted names ("layer1.0.conv1.weight"), for optimizers,
// checkpoints and parity tests.
struct ModuleState {
  std::vector<std::pair<std::string, Parameter*>> parameters;
  std::vector<std::pair<std::string, Tensor*>> buffers;  // e.g. batch-norm running statistics
};

class Module {
 public:
  Module() = default;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;
  virtual ~Module() = default;

  Tensor forward(const Tensor& x, Context& ctx) { return run_forward(x, ctx); }
  Tensor backward(const Tensor& dy, Context& ctx);
  Tensor forward(const Tensor& x) { return forward(x, context_); }
  Tensor backward(const Tensor& dy) { return backward(dy, context_); }
  // backward(dy) for a network fed with data, whose input's gradient is of no use: the same
  // parameter gradients, and a first layer that can skip computing the input's gradient does (a
  // convolution's backward-data pass, 8% of ResNet-18's step on the CPU).
  void backward_to_parameters(const Tensor& dy);

  // The modules this one is made of, in forward order, each with the name its parameters go
  // under ("" for none: a wrapper's parameters keep their names).
  struct Child {
    std::string name;
    Module* module;
  };
  virtual std::vector<Child> children() { return {}; }

  // Adds this module's own parameters and buffers under `prefix`, then its children's.
  virtual void collect(const std::string& prefix, ModuleState& state);
  void set_training(bool training);  // this module and every descendant

  // Called with each parameter as soon as its gradient is complete during backward (used by
  // data parallelism to start reducing it while the rest of the backward pass runs); set on
  // this module and every descendant.
  using GradReadyHook = std::function<void(Parameter&)>;
  void set_grad_ready_hook(const GradReadyHook& hook);

  ModuleState state();
  std::vector<Parameter*> parameters();
  // The elements of all its parameters (what a model's size is quoted in).
  int64_t parameter_count();
  // The child named `name`; throws naming the children there are.
  Module& child(const std::string& name);
  virtual void zero_grad();  // sharded data parallelism zeroes its shards instead
  bool training() const { return training_; }

 protected:
  virtual Tensor run_forward(const Tensor& x, Context& ctx) = 0;
  virtual Tensor run_backward(const Tensor& dy, Context& ctx) = 0;

  void grad_ready(Parameter& p) const {
    if (hook_) hook_(p);
  }

  // For a kernel that adds a parameter's gradient sums in the same pass as the input's gradient
  // (the norms): where to add them. Usually the gradient itself; while `ctx` defers weight
  // gradients, zeroed scratch, which add_gradient_sums adds to the gradient in the W half.
  static Tensor gradient_sums_target(const Parameter& p, const Context& ctx);
  // The W half of such a parameter: adds the scratch (not the gradient itself), then marks it
  // ready.
  void add_gradient_sums(Parameter& p, const Tensor& target) const;

  bool training_ = true;
  GradReadyHook hook_;

 private:
  Context context_;  // of forward(x) / backward(dy)
};

using ModulePtr = std::unique_ptr<Module>;

}  // namespace course::nn
