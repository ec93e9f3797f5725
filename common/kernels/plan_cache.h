// Library plans (cuDNN graphs) built once per shape and remembered, and the shapes a library
// refused remembered too, each refusal reported once: a training step then finds its plan, or
// its fallback, in a map look-up instead of a build or a message per step. Keep one cache per
// thread (a plan is bound to the handle that built it, and handles are per thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/core/error.h"

namespace course {

// What a plan builder throws when the library has no engine for a shape: the caller falls back
// to its own kernels. Any other exception (a CUDA error, no memory) is an error and propagates.
class PlanRefused : public Error {
 public:
  using Error::Error;
};

template <class Key, class Plan>
class PlanCache {
 public:
  // The plan of `key`: build(key) the first time (it returns a Plan or throws PlanRefused),
  // after that the same plan. nullptr for a refused key, whose refusal `report(reason)` was
  // told once, when it was refused; a refused key is never built again.
  template <class Build, class Report>
  Plan* find_or_build(const Key& key, Build&& build, Report&& report) {
    auto found = plans_.find(key);
    if (found == plans_.end()) {
      std::optional<Plan> plan;
      try {
        plan.emplace(build(key));
      } catch (const PlanRefused& refusal) {
        report(std::string(refusal.what()));
      }
      found = plans_.emplace(key, std::move(plan)).first;
    }
    return found->second ? &*found->second : nullptr;
  }

  // The keys seen so far, built or refused.
  size_t size() const { return plans_.size(); }

 private:
  std::map<Key, std::optional<Plan>> plans_;
};

// Whether this build has cuDNN's graphs (CUDA with the cuDNN frontend's headers), and how many
// of them (flash attention, normalisations: cudnn_graph.h) this process has run: the tests' way
// to see that a fused path ran.
bool cudnn_graphs_compiled();
int64_t cudnn_graph_executions();

}  // namespace course
