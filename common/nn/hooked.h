// A module wrapped with hooks around its forward and backward passes, the mechanism FSDP is
// built on: gather a block's sharded parameters before its forward (pre-forward), free them
// after it (post-forward), gather them again before its backward (pre-backward), and
// reduce-scatter its gradients and free the parameters after it (post-backward). The wrapper
// is transparent otherwise: same parameters under the same names, same gradient-ready hook.
#pragma once

#include <functional>

#include "common/nn/module.h"

namespace course::nn {

struct ModuleHooks {
  using Hook = std::function<void(Module& inner)>;
  Hook pre_forward, post_forward, pre_backward, post_backward;  // each optional
};

class Hooked : public Module {
 public:
  Hooked(ModulePtr inner, ModuleHooks hooks);

  std::vector<Child> children() override { return {{"", inner_.get()}}; }

  Module& inner() { return *inner_; }
  void set_hooks(ModuleHooks hooks) { hooks_ = std::move(hooks); }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  ModulePtr inner_;
  ModuleHooks hooks_;
};

}  // namespace course::nn
