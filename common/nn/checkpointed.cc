// Activation checkpointing wrapper.
#include "common/nn/checkpointed.h"

#include <string>
#include <utility>
#include <vector>

#include "common/kernels/elementwise.h"

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
  const std::vector<std::pair<std::string, Tensor*>> buffers = inner_->state().buffers;
  std::vector<Tensor> after_forward;
  for (const auto& named : buffers) after_forward.push_back(named.second->clone());
  Context recomputed;
  inner_->forward(ctx.saved<Tensor>("Checkpointed"), recomputed);
  for (size_t i = 0; i < buffers.size(); ++i) copy_(*buffers[i].second, after_forward[i]);
  return inner_->backward(dy, recomputed);
}

}  // namespace course::nn
