// Modules run one after the other: the forward through each in order, the backward through each
// in reverse, child i on context child i. Sequential runs its own children so; ModuleChain is a
// view running layers another module owns, under the names they have there (a pipeline stage:
// a run of a model's layers).
#pragma once

#include <utility>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

Tensor forward_in_order(const std::vector<Module::Child>& layers, const Tensor& x, Context& ctx);
Tensor backward_in_reverse(const std::vector<Module::Child>& layers, const Tensor& dy,
                           Context& ctx);

class ModuleChain : public Module {
 public:
  explicit ModuleChain(std::vector<Child> layers) : layers_(std::move(layers)) {}
  std::vector<Child> children() override { return layers_; }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override {
    return forward_in_order(layers_, x, ctx);
  }
  Tensor run_backward(const Tensor& dy, Context& ctx) override {
    return backward_in_reverse(layers_, dy, ctx);
  }

 private:
  std::vector<Child> layers_;  // in forward order
};

}  // namespace course::nn
