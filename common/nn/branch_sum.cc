// Two summed paths.
#include "common/nn/branch_sum.h"

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::nn {

BranchSum::BranchSum(ModulePtr main, ModulePtr shortcut)
    : main_(std::move(main)), shortcut_(std::move(shortcut)) {
  COURSE_CHECK(main_ != nullptr, "a branch sum needs a main path");
}

std::vector<Module::Child> BranchSum::children() {
  std::vector<Child> out = {{"main", main_.get()}};
  if (shortcut_) out.push_back({"shortcut", shortcut_.get()});
  return out;
}

// Child contexts: 0 the main path, 1 the shortcut.
Tensor BranchSum::run_forward(const Tensor& x, Context& ctx) {
  const Tensor main = as_dtype(main_->forward(x, ctx.child(0)), x.dtype());
  return add(main, shortcut_ ? as_dtype(shortcut_->forward(x, ctx.child(1)), x.dtype()) : x);
}

Tensor BranchSum::run_backward(const Tensor& dy, Context& ctx) {
  const Tensor dx_main = as_dtype(main_->backward(dy, ctx.child(0)), dy.dtype());
  return add(dx_main, shortcut_ ? as_dtype(shortcut_->backward(dy, ctx.child(1)), dy.dtype()) : dy);
}

}  // namespace course::nn
