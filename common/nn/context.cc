// Per-call saved state.
#include "common/nn/context.h"

namespace course::nn {

Context& Context::child(size_t i) {
  while (children_.size() <= i) children_.push_back(std::make_unique<Context>());
  return *children_[i];
}

void Context::clear() {
  saved_.reset();
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
