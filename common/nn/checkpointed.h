// Activation checkpointing: the wrapped module's forward keeps only its input; backward runs
// the forward again into a fresh context, then its backward. Peak memory falls from every
// block's activations to one block's plus the blocks' inputs, for one more forward per step.
//
// Gradients are bit for bit those of the plain module when its forward is deterministic (no
// dropout): the recomputation repeats the same arithmetic on the same values, batch
// normalisation included (the same batch, the same statistics). The running statistics the
// recomputation would move a second time are put back, so they move once a step, as without
// checkpointing. The recomputation runs in a child of the call's context, so a backward that
// does not want its input's gradient, or that defers its weight gradients, does so inside too.
#pragma once

#include <vector>

#include "common/nn/module.h"

namespace course::nn {

class Checkpointed : public Module {
 public:
  explicit Checkpointed(ModulePtr inner);
  std::vector<Child> children() override { return {{"", inner_.get()}}; }
  Module& inner() { return *inner_; }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  ModulePtr inner_;
};

}  // namespace course::nn
