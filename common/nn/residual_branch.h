// A residual branch of a transformer: y = x + f(x). The residual stream keeps x's dtype (f32)
// while f may compute in a 16-bit autocast dtype; its output is cast back before the sum, and
// the stream's gradient flows both around and through f.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class ResidualBranch : public Module {
 public:
  explicit ResidualBranch(ModulePtr branch);
  std::vector<Child> children() override { return {{"", branch_.get()}}; }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  ModulePtr branch_;
};

}  // namespace course::nn
