// Module bookkeeping shared by every layer.
#include "common/nn/module.h"

#include <utility>

#include "common/kernels/elementwise.h"

namespace course::nn {

Parameter::Parameter(Tensor v)
    : value(std::move(v)), grad(zeros(value.shape(), DType::kF32, value.device())) {
  COURSE_CHECK(value.dtype() == DType::kF32, "parameters are f32 master weights, got ",
               value.str());
}

Module::Module(Module&& other) noexcept
    : training_(other.training_),
      hook_(std::move(other.hook_)),
      context_(std::move(other.context_)) {}

Module& Module::operator=(Module&& other) noexcept {
  training_ = other.training_;
  hook_ = std::move(other.hook_);
  context_ = std::move(other.context_);
  own_parameters_.reset();
  zero_table_ = UpdateTable();
  return *this;
}

const std::vector<Parameter*>& Module::own_parameters() {
  if (!own_parameters_) {
    std::vector<Parameter*> own = parameters();
    for (const Child& c : children()) {
      for (Parameter* p : c.module->parameters()) std::erase(own, p);
    }
    for (Parameter* p : borrowed_parameters()) own.push_back(p);
    own_parameters_ = std::move(own);
  }
  return *own_parameters_;
}

Tensor Module::backward(const Tensor& dy, Context& ctx) {
  for (Parameter* p : own_parameters()) {
    if (p->grad_on_demand && !p->grad.defined()) {
      p->grad = zeros(p->value.shape(), DType::kF32, p->value.device());
    }
  }
  ++backward_depth_;
  Tensor dx;
  try {
    dx = run_backward(dy, ctx);
  } catch (...) {
    --backward_depth_;
    ready_.clear();
    throw;
  }
  --backward_depth_;
  ctx.clear();
  if (backward_depth_ == 0) {
    const std::vector<Parameter*> ready = std::exchange(ready_, {});
    for (Parameter* p : ready) hook_(*p);
  }
  return dx;
}

void Module::backward_to_parameters(const Tensor& dy) {
  context_.set_input_gradient_wanted(false);
  backward(dy, context_);
}

Tensor Module::gradient_sums_target(const Parameter& p, const Context& ctx) {
  return ctx.defers_weight_gradients() ? zeros(p.grad.shape(), DType::kF32, p.grad.device())
                                       : p.grad;
}

Tensor Module::kept_for_backward(const Parameter& p, const Tensor& compute) const {
  const bool copy = compute.data() != p.value.data();
  return training_ && copy && !p.released_between_passes ? compute : Tensor();
}

void Module::add_gradient_sums(Parameter& p, const Tensor& target) {
  if (target.data() != p.grad.data()) axpy_(1.0f, target, p.grad);
  grad_ready(p);
}

void Module::collect(const std::string& prefix, ModuleState& state) {
  for (const Child& c : children()) {
    c.module->collect(c.name.empty() ? prefix : prefix + c.name + ".", state);
  }
}

void Module::set_training(bool training) {
  training_ = training;
  for (const Child& c : children()) c.module->set_training(training);
}

void Module::set_grad_ready_hook(const GradReadyHook& hook) {
  hook_ = hook;
  for (const Child& c : children()) c.module->set_grad_ready_hook(hook);
}

Parameter::Parameter(Tensor v, Tensor g) : value(std::move(v)), grad(std::move(g)) {
  COURSE_CHECK(value.dtype() == DType::kF32 && grad.dtype() == DType::kF32 &&
                   value.shape() == grad.shape() && value.device() == grad.device(),
               "a parameter's value and gradient must be f32 of one shape and device, got ",
               value.str(), " and ", grad.str());
}

Tensor Parameter::f32_value() const {
  return value.dtype() == DType::kF32 ? value : cast(value, DType::kF32);
}

ModuleState Module::state() {
  ModuleState s;
  collect("", s);
  return s;
}

std::vector<Parameter*> Module::parameters() {
  std::vector<Parameter*> out;
  for (auto& [name, p] : state().parameters) out.push_back(p);
  return out;
}

int64_t Module::parameter_count() {
  int64_t total = 0;
  for (const Parameter* p : parameters()) total += p->value.numel();
  return total;
}

Module& Module::child(const std::string& name) {
  std::string names;
  for (const Child& c : children()) {
    if (c.name == name) return *c.module;
    names += (names.empty() ? "" : ", ") + c.name;
  }
  COURSE_FAIL("no child named ", name, " among this module's children (", names, ")");
}

void Module::zero_grad() {
  std::vector<UpdateSlots> grads;
  bool one_device = true;
  for (Parameter* p : parameters()) {
    if (!p->grad.defined()) continue;
    one_device = one_device && (grads.empty() || p->grad.device() == grads.front()[0]->device());
    grads.push_back({&p->grad});
  }
  if (one_device) {
    zero_tensors_(zero_table_, grads);
    return;
  }
  for (const UpdateSlots& g : grads) fill_(*g[0], 0.0);
}

BufferSnapshot::BufferSnapshot(Module& module) {
  for (const auto& [name, buffer] : module.state().buffers)
    saved_.emplace_back(buffer, buffer->clone());
}

void BufferSnapshot::restore() const {
  for (const auto& [buffer, copy] : saved_) copy_(*buffer, copy);
}

}  // namespace course::nn
