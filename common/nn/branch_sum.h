// Two paths from one input, summed: y = main(x) + shortcut(x), the shortcut the identity when
// empty. CoAtNet's downsampling blocks (Dai et al. 2021, eq. 4-5) are this: the main path pools
// or strides, the shortcut pools and projects. Both sums are taken in x's dtype, as a residual
// branch's (common/nn/residual_branch.h), so a 16-bit autocast path adds onto an f32 stream.
#pragma once

#include "common/nn/sequential.h"

namespace course::nn {

class BranchSum : public Module {
 public:
  BranchSum(ModulePtr main, ModulePtr shortcut);  // shortcut null: the identity
  std::vector<Child> children() override;

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  ModulePtr main_;
  ModulePtr shortcut_;
};

}  // namespace course::nn
