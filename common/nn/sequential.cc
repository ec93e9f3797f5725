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

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& [name, child] : children_) h = child->forward(h);
  return h;
}

Tensor Sequential::backward(const Tensor& dy) {
  Tensor g = dy;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) g = it->second->backward(g);
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
