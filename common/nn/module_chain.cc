// Layers in order forward, in reverse backward.
#include "common/nn/module_chain.h"

namespace course::nn {

Tensor forward_in_order(const std::vector<Module::Child>& layers, const Tensor& x, Context& ctx) {
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) h = layers[i].module->forward(h, ctx.child(i));
  return h;
}

Tensor backward_in_reverse(const std::vector<Module::Child>& layers, const Tensor& dy,
                           Context& ctx) {
  Tensor g = dy;
  for (size_t i = layers.size(); i-- > 0;) g = layers[i].module->backward(g, ctx.child(i));
  return g;
}

}  // namespace course::nn
