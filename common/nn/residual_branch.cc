// Residual branch.
#include "common/nn/residual_branch.h"

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::nn {

ResidualBranch::ResidualBranch(ModulePtr branch) : branch_(std::move(branch)) {
  COURSE_CHECK(branch_ != nullptr, "a residual branch needs a module");
}

Tensor ResidualBranch::run_forward(const Tensor& x, Context& ctx) {
  return add(x, as_dtype(branch_->forward(x, ctx.child(0)), x.dtype()));
}

Tensor ResidualBranch::run_backward(const Tensor& dy, Context& ctx) {
  return add(dy, as_dtype(branch_->backward(dy, ctx.child(0)), dy.dtype()));
}

}  // namespace course::nn
