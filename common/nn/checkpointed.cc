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
  Context recomputed;
  inner_->forward(ctx.saved<Tensor>("Checkpointed"), recomputed);
  return inner_->backward(dy, recomputed);
}

}  // namespace course::nn
