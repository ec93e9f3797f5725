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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/optimizer_kernels.h"
#include "common/nn/context.h"
#include "common/tensor/tensor.h"

namespace course::nn {

struct Parameter {
  Tensor value;  // f32; 16-bit while sharded mixed precision binds a compute copy
  Tensor grad;   // f32, same shape, zero at creation
  // The optimizer in backward frees the gradient once its update is done: backward then makes a
  // zeroed one again when it first adds to it (Module::backward), so no step keeps a whole
  // model's gradients between its updates.
  bool grad_on_demand = false;
  // Set by sharded data parallelism when it frees the gathered value between a layer's forward
  // and backward (ZeRO-3, FSDP's FULL_SHARD): layers then keep no copy of it across the passes.
  bool released_between_passes = false;

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
  // A moved module finds its own parameters again (their addresses moved with it).
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  virtual ~Module() = default;

  Tensor forward(const Tensor& x, Context& ctx) { return run_forward(x, ctx); }
  // Makes the zeroed gradients of this module's parameters that are on demand and freed
  // (Parameter::grad_on_demand), then runs its backward.
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

  // Called with each parameter as soon as its gradient is complete and its layer's backward
  // done with it (the calls a layer makes during its backward come when that backward returns,
  // so the hook may change the parameter: the optimizer in backward): data parallelism starts
  // reducing it while the rest of the backward pass runs. Set on this module and every
  // descendant.
  using GradReadyHook = std::function<void(Parameter&)>;
  void set_grad_ready_hook(const GradReadyHook& hook);

  ModuleState state();
  std::vector<Parameter*> parameters();
  // The elements of all its parameters (what a model's size is quoted in).
  int64_t parameter_count();
  // The child named `name`; throws naming the children there are.
  Module& child(const std::string& name);
  // Every gradient zeroed in one launch where they share a device (freed ones stay freed);
  // sharded data parallelism zeroes its shards instead.
  virtual void zero_grad();
  bool training() const { return training_; }

 protected:
  virtual Tensor run_forward(const Tensor& x, Context& ctx) = 0;
  virtual Tensor run_backward(const Tensor& dy, Context& ctx) = 0;
  // Parameters of other modules whose gradients this one's backward adds to (a tied output
  // layer's embedding table).
  virtual std::vector<Parameter*> borrowed_parameters() { return {}; }

  void grad_ready(Parameter& p) {
    if (!hook_) return;
    if (backward_depth_ > 0) {
      ready_.push_back(&p);
    } else {
      hook_(p);  // a weight-gradient pass deferred past the backward (ZB-H1's W)
    }
  }

  // For a kernel that adds a parameter's gradient sums in the same pass as the input's gradient
  // (the norms): where to add them. Usually the gradient itself; while `ctx` defers weight
  // gradients, zeroed scratch, which add_gradient_sums adds to the gradient in the W half.
  static Tensor gradient_sums_target(const Parameter& p, const Context& ctx);
  // What a layer saves for backward of `compute`, the copy of `p` its forward computed with (cast
  // to the compute dtype, relaid as a convolution reads it): the copy itself while training, as
  // PyTorch's autograd keeps the cast weight a product read, so backward does not make it again;
  // nothing when `compute` is the parameter itself, in evaluation, or when the parameter is
  // released between the passes (keeping a copy would undo what sharding saves). Backward makes
  // its own copy where nothing was kept.
  Tensor kept_for_backward(const Parameter& p, const Tensor& compute) const;
  // The W half of such a parameter: adds the scratch (not the gradient itself), then marks it
  // ready.
  void add_gradient_sums(Parameter& p, const Tensor& target);

  bool training_ = true;
  GradReadyHook hook_;

 private:
  // The parameters this module's own backward adds to: its subtree's less its children's, and
  // those it borrows (found once, at the first backward).
  const std::vector<Parameter*>& own_parameters();

  Context context_;  // of forward(x) / backward(dy)
  std::optional<std::vector<Parameter*>> own_parameters_;
  int backward_depth_ = 0;         // run_backward calls of this module in progress
  std::vector<Parameter*> ready_;  // grad_ready() calls made in them, passed on when they end
  UpdateTable zero_table_;         // zero_grad's launch over every gradient
};

using ModulePtr = std::unique_ptr<Module>;

// A module's buffers (batch norm's running statistics) as they are now, put back by restore():
// for a forward pass run again over the same batch, which must not move them a second time
// (activation checkpointing's recomputation, the optimizer in backward's inspecting pass).
class BufferSnapshot {
 public:
  explicit BufferSnapshot(Module& module);
  void restore() const;

 private:
  std::vector<std::pair<Tensor*, Tensor>> saved_;  // each buffer and its copy
};

}  // namespace course::nn
