// Context: what one forward call of a module saved for its backward call.
//
// Saved activations live here rather than in the module, so a module can have several calls in
// flight (micro-batches of a pipeline schedule, the recomputation of activation checkpointing)
// and back them up in any order: each call gets its own Context, and backward(dy, ctx) consumes
// and releases it. Composite modules keep their children's calls in child contexts.
//
// A backward pass is two passes in one: the input's gradient (B), which the previous layer
// waits for, and the parameters' gradients (W), which only the optimizer step needs. A
// zero-bubble pipeline runs W later, in what would be idle time: with a WeightGradientQueue
// attached to a call's context, the modules hand it their W work (holding what it reads) instead
// of running it, and the pipeline runs the queue when its schedule says.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <vector>

#include "common/core/error.h"

namespace course::nn {

// The W halves of the backward passes of one call, in the order the modules queued them.
class WeightGradientQueue {
 public:
  void push(std::function<void()> work) { work_.push_back(std::move(work)); }
  // Runs and drops the queued work, in order, calling `between` (if set) after each item: a
  // caller whose messages travel meanwhile lets MPI move them (it progresses only in its calls).
  void run(const std::function<void()>& between = {});
  bool empty() const { return work_.empty(); }

 private:
  std::vector<std::function<void()>> work_;
};

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
  // Child i's context where that child is fed this call's own input (a chain's first layer, a
  // wrapper's inner module): it learns whether this call wants its input's gradient.
  Context& child_fed_input(size_t i);

  // Whether the caller uses the gradient of this call's input: yes unless set otherwise for one
  // backward call (a network fed with data has no use for it). A module told no may skip
  // computing it and return an undefined tensor.
  void set_input_gradient_wanted(bool wanted) { input_gradient_wanted_ = wanted; }
  bool input_gradient_wanted() const { return input_gradient_wanted_; }

  // Drops everything saved, this call's and its children's, and wants input gradients again.
  void clear();
  bool empty() const;

  // While `queue` is set (not null), this context and its children hand parameter-gradient
  // work to it; null runs it at once again.
  void defer_weight_gradients(WeightGradientQueue* queue);
  // A module's parameter-gradient work: queued, or run now. It must hold what it reads (the
  // context's saved state is released when the backward call returns).
  void weight_gradient(std::function<void()> work);
  bool defers_weight_gradients() const { return deferred_ != nullptr; }

 private:
  std::any saved_;
  std::vector<std::unique_ptr<Context>> children_;
  WeightGradientQueue* deferred_ = nullptr;
  bool input_gradient_wanted_ = true;
};

}  // namespace course::nn
