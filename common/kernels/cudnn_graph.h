// cuDNN graphs built and run the cuDNN frontend's way, for this library's fused operations
// (flash attention, layer normalisation): describe the tensors by dims and strides, validate,
// lower to the backend's operation graph, ask the heuristics (mode A) for engine
// configurations, keep those this GPU supports, build their plans; running one then needs only
// the pointers and a workspace. A plan is built once per shape and thread (plan_cache.h), or
// loaded where an earlier process kept it (plan_store.h), and a shape cuDNN has no engine for is
// said once and left to the course's kernels.
// Include only from code compiled with CUDA and the frontend (COURSE_WITH_CUDNN_FRONTEND).
#pragma once

#include <cudnn_frontend.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/kernels/library_handle.h"
#include "common/kernels/plan_cache.h"
#include "common/tensor/tensor.h"

namespace course::cudnn_graph {

namespace fe = cudnn_frontend;
using TensorAttributes = std::shared_ptr<fe::graph::Tensor_attributes>;
using GraphPtr = std::shared_ptr<fe::graph::Graph>;

fe::DataType_t data_type(DType dtype);

// A graph whose inputs and outputs are `io` unless a tensor says otherwise, computing in f32.
GraphPtr new_graph(DType io);

std::vector<int64_t> as_vector(const std::array<int64_t, 4>& values);

struct Plan {
  GraphPtr graph;
  int64_t workspace_bytes = 0;
};

// The described graph validated, lowered and planned (or, with a plan store named
// (plan_store.h), its plan loaded from there when an earlier process kept it, and kept there
// when built); throws PlanRefused naming the step that found no way.
Plan finish(GraphPtr graph, cudnnHandle_t handle, Device device);

// Runs the plan on the thread's stream, its workspace from the device's allocator; what() names
// the operation in an error (formatted only then: a step runs this on every call).
void execute(const Plan& plan, Device device, cudnnHandle_t handle,
             std::unordered_map<int64_t, void*>& pointers,
             const std::function<std::string()>& what);

// "note: cuDNN has no <what> for the <shape> on <device> (<reason>); the course's kernels run it"
void report_refusal(const char* what, const std::string& shape, Device device,
                    const std::string& reason);

// Runs the plan of `key` (described by describe(key), a GraphPtr, the first time on this thread),
// or returns false when cuDNN has none for it. Key: ordered, with str() naming the shape.
template <class Key, class Describe>
bool run(const Key& key, Device device, const char* what, Describe&& describe,
         std::unordered_map<int64_t, void*> pointers) {
  cudnnHandle_t handle = cudnn_handle(device);
  thread_local PlanCache<Key, Plan> plans;
  Plan* plan = plans.find_or_build(
      key, [&](const Key& k) { return finish(describe(k), handle, device); },
      [&](const std::string& reason) { report_refusal(what, key.str(), device, reason); });
  if (plan == nullptr) return false;
  execute(*plan, device, handle, pointers,
          [&] { return detail::concat(what, " (", key.str(), ")"); });
  return true;
}

}  // namespace course::cudnn_graph
