// Activation checkpointing wrapper.
#include "common/nn/checkpointed.h"

#include "common/kernels/elementwise.h"

namespace course::nn {

Checkpointed::Checkpointed(ModulePtr inner) : inner_(std::move(inner)) {
  COURSE_CHECK(inner_ != nullptr, "a checkpointed module needs a module to wrap");
  for (const auto& named : inner_->state().buffers) buffers_.push_back(named.second);
}

Tensor Checkpointed::run_forward(const Tensor& x, Context& ctx) {
  Context discarded;  // the activations, released when this call returns
  Tensor y = inner_->forward(x, discarded);
  ctx.save(x);
  return y;
}

Tensor Checkpointed::run_backward(const Tensor& dy, Context& ctx) {
  std::vector<Tensor> after_forward;
  for (const Tensor* buffer : buffers_) after_forward.push_back(buffer->clone());
  // The recomputation's context is a child fed this call's input: it inherits whether the input's
  // gradient is wanted and where the weight gradients go (a zero-bubble pipeline's queue).
  Context& recomputed = ctx.child_fed_input(0);
  inner_->forward(ctx.saved<Tensor>("Checkpointed"), recomputed);
  for (size_t i = 0; i < buffers_.size(); ++i) copy_(*buffers_[i], after_forward[i]);
  return inner_->backward(dy, recomputed);
}

}  // namespace course::nn
