// Sequential container.
#include "common/nn/sequential.h"

#include "common/nn/module_chain.h"

namespace course::nn {

Sequential& Sequential::add(ModulePtr child, std::string name) {
  if (name.empty()) name = std::to_string(children_.size());
  child->set_training(training_);
  child->set_grad_ready_hook(hook_);
  children_.emplace_back(std::move(name), std::move(child));
  return *this;
}

namespace {

Module& module_of(const std::pair<std::string, ModulePtr>& child) { return *child.second; }

}  // namespace

Tensor Sequential::run_forward(const Tensor& x, Context& ctx) {
  return forward_in_order(children_, module_of, x, ctx);
}

Tensor Sequential::run_backward(const Tensor& dy, Context& ctx) {
  return backward_in_reverse(children_, module_of, dy, ctx);
}

std::vector<Module::Child> Sequential::children() {
  std::vector<Child> out;
  for (auto& [name, child] : children_) out.push_back({name, child.get()});
  return out;
}

void Sequential::wrap_children(const std::function<ModulePtr(ModulePtr)>& wrap) {
  for (auto& [name, child] : children_) {
    child = wrap(std::move(child));
    child->set_training(training_);
    child->set_grad_ready_hook(hook_);
  }
}

}  // namespace course::nn
