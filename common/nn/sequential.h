// Sequential: children run in order forward and in reverse order backward. Children are named
// by their index unless given a name ("0.weight", "conv1.weight").
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

class Sequential : public Module {
 public:
  Sequential& add(ModulePtr child, std::string name = "");
  template <class M, class... Args>
  M& emplace(Args&&... args) {
    auto child = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *child;
    add(std::move(child));
    return ref;
  }

  // Adds `child` as `name` and returns it as its own type (a builder keeping a layer by role).
  template <class M>
  M& add_named(std::unique_ptr<M> child, std::string name) {
    M& ref = *child;
    add(std::move(child), std::move(name));
    return ref;
  }

  std::vector<Child> children() override;
  size_t size() const { return children_.size(); }
  // Replaces every child by wrap(child), keeping its name (FSDP wraps each block this way).
  void wrap_children(const std::function<ModulePtr(ModulePtr)>& wrap);

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  std::vector<std::pair<std::string, ModulePtr>> children_;
};

}  // namespace course::nn
