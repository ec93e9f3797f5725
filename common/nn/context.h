// Context: what one forward call of a module saved for its backward call.
//
// Saved activations live here rather than in the module, so a module can have several calls in
// flight (micro-batches of a pipeline schedule, the recomputation of activation checkpointing)
// and back them up in any order: each call gets its own Context, and backward(dy, ctx) consumes
// and releases it. Composite modules keep their children's calls in child contexts.
#pragma once

#include <any>
#include <memory>
#include <vector>

#include "common/core/error.h"

namespace course::nn {

class Context {
 public:
  Context() = default;
  Context(Context&&) = default;
  Context& operator=(Context&&) = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Replaces what this call saved (each module defines the struct it needs).
  template <class State>
  void save(State state) {
    saved_ = std::move(state);
  }

  // What forward saved; a clear error when there is nothing (backward without its forward, or
  // twice on one context).
  template <class State>
  State& saved(const char* module) {
    State* state = std::any_cast<State>(&saved_);
    COURSE_CHECK(state != nullptr, module,
                 " backward without a forward on this context (or the context was already used)");
    return *state;
  }

  // The context of child i of a composite module, created on first use.
  Context& child(size_t i);

  // Drops everything saved, this call's and its children's.
  void clear();
  bool empty() const;

 private:
  std::any saved_;
  std::vector<std::unique_ptr<Context>> children_;
};

}  // namespace course::nn
