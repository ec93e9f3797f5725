// Sequential container.
#include "common/nn/sequential.h"

namespace course::nn {

Sequential& Sequential::add(ModulePtr child, std::string name) {
  if (name.empty()) name = std::to_string(children_.size());
  child->set_training(training_);
  child->set_grad_ready_hook(hook_);
  children_.emplace_back(std::move(name), std::move(child));
  return *this;
}

Tensor Sequential::run_forward(const Tensor& x, Context& ctx) {
  Tensor h = x;
  for (size_t i = 0; i < children_.size(); ++i) h = children_[i].second->forward(h, ctx.child(i));
  return h;
}

Tensor Sequential::run_backward(const Tensor& dy, Context& ctx) {
  Tensor g = dy;
  for (size_t i = children_.size(); i-- > 0;) g = children_[i].second->backward(g, ctx.child(i));
  return g;
}

void Sequential::collect(const std::string& prefix, ModuleState& state) {
  for (auto& [name, child] : children_) child->collect(prefix + name + ".", state);
}

void Sequential::set_training(bool training) {
  Module::set_training(training);
  for (auto& [name, child] : children_) child->set_training(training);
}

void Sequential::set_grad_ready_hook(const GradReadyHook& hook) {
  Module::set_grad_ready_hook(hook);
  for (auto& [name, child] : children_) child->set_grad_ready_hook(hook);
}

}  // namespace course::nn
