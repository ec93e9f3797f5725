// Modules run one after the other: the forward through each in order, the backward through each
// in reverse, layer i on context child i. Sequential runs its own children so; ModuleChain is a
// view running layers another module owns, under the names they have there (a pipeline stage:
// a run of a model's layers).
#pragma once

#include <utility>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

// `module_of(layer)` is each layer's Module& (a Child's, a Sequential's owned pointer's).
template <class Layers, class ModuleOf>
Tensor forward_in_order(const Layers& layers, ModuleOf module_of, const Tensor& x, Context& ctx) {
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) h = module_of(layers[i]).forward(h, ctx.child(i));
  return h;
}

template <class Layers, class ModuleOf>
Tensor backward_in_reverse(const Layers& layers, ModuleOf module_of, const Tensor& dy,
                           Context& ctx) {
  Tensor g = dy;
  for (size_t i = layers.size(); i-- > 0;) {
    g = module_of(layers[i]).backward(g, i == 0 ? ctx.child_fed_input(0) : ctx.child(i));
  }
  return g;
}

class ModuleChain : public Module {
 public:
  explicit ModuleChain(std::vector<Child> layers) : layers_(std::move(layers)) {}
  std::vector<Child> children() override { return layers_; }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override {
    return forward_in_order(layers_, module_of, x, ctx);
  }
  Tensor run_backward(const Tensor& dy, Context& ctx) override {
    return backward_in_reverse(layers_, module_of, dy, ctx);
  }

 private:
  static Module& module_of(const Child& layer) { return *layer.module; }

  std::vector<Child> layers_;  // in forward order
};

}  // namespace course::nn
