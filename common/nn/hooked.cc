// Hooks around a wrapped module.
#include "common/nn/hooked.h"

namespace course::nn {

namespace {

void call(const ModuleHooks::Hook& hook, Module& inner) {
  if (hook) hook(inner);
}

}  // namespace

Hooked::Hooked(ModulePtr inner, ModuleHooks hooks)
    : inner_(std::move(inner)), hooks_(std::move(hooks)) {
  COURSE_CHECK(inner_ != nullptr, "a hooked module needs a module to wrap");
}

Tensor Hooked::run_forward(const Tensor& x, Context& ctx) {
  call(hooks_.pre_forward, *inner_);
  Tensor y = inner_->forward(x, ctx.child(0));
  call(hooks_.post_forward, *inner_);
  return y;
}

Tensor Hooked::run_backward(const Tensor& dy, Context& ctx) {
  call(hooks_.pre_backward, *inner_);
  Tensor dx = inner_->backward(dy, ctx.child_fed_input(0));
  call(hooks_.post_backward, *inner_);
  return dx;
}

}  // namespace course::nn
