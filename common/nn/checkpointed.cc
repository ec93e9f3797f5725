// Activation checkpointing wrapper.
#include "common/nn/checkpointed.h"

namespace course::nn {

Checkpointed::Checkpointed(ModulePtr inner) : inner_(std::move(inner)) {
  COURSE_CHECK(inner_ != nullptr, "a checkpointed module needs a module to wrap");
}

Tensor Checkpointed::run_forward(const Tensor& x, Context& ctx) {
  Context discarded;  // the activations, released when this call returns
  Tensor y = inner_->forward(x, discarded);
  ctx.save(x);
  return y;
}

Tensor Checkpointed::run_backward(const Tensor& dy, Context& ctx) {
  const BufferSnapshot after_forward(*inner_);
  // The recomputation's context is a child fed this call's input: it inherits whether the input's
  // gradient is wanted and where the weight gradients go (a zero-bubble pipeline's queue).
  Context& recomputed = ctx.child_fed_input(0);
  inner_->forward(ctx.saved<Tensor>("Checkpointed"), recomputed);
  after_forward.restore();
  return inner_->backward(dy, recomputed);
}

}  // namespace course::nn
