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

  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;
  void set_training(bool training) override;
  void set_grad_ready_hook(const GradReadyHook& hook) override;

  Module& inner() { return *inner_; }
  void set_hooks(ModuleHooks hooks) { hooks_ = std::move(hooks); }

 private:
  ModulePtr inner_;
  ModuleHooks hooks_;
};

}  // namespace course::nn
