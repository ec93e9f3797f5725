// Per-call saved state.
#include "common/nn/context.h"

namespace course::nn {

void WeightGradientQueue::run(const std::function<void()>& between) {
  std::vector<std::function<void()>> work;
  work.swap(work_);
  for (const auto& w : work) {
    w();
    if (between) between();
  }
}

Context& Context::child(size_t i) {
  while (children_.size() <= i) {
    children_.push_back(std::make_unique<Context>());
    children_.back()->deferred_ = deferred_;
  }
  return *children_[i];
}

Context& Context::child_fed_input(size_t i) {
  Context& c = child(i);
  c.input_gradient_wanted_ = input_gradient_wanted_;
  return c;
}

void Context::defer_weight_gradients(WeightGradientQueue* queue) {
  deferred_ = queue;
  for (auto& c : children_) c->defer_weight_gradients(queue);
}

void Context::weight_gradient(std::function<void()> work) {
  if (deferred_) {
    deferred_->push(std::move(work));
  } else {
    work();
  }
}

void Context::clear() {
  saved_.reset();
  input_gradient_wanted_ = true;
  for (auto& c : children_) c->clear();
}

bool Context::empty() const {
  if (saved_.has_value()) return false;
  for (const auto& c : children_) {
    if (!c->empty()) return false;
  }
  return true;
}

}  // namespace course::nn
