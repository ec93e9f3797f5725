// The shared steps of this library's cuDNN graphs (cudnn_graph.h), and the handle through which
// the frontend finds cuDNN's functions.
#include <atomic>
#include <cstdio>

#include "common/kernels/plan_cache.h"

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string_view>

#include "common/kernels/cudnn_graph.h"
#include "common/kernels/library_workspace.h"
#include "common/kernels/plan_store.h"
#include "common/tensor/relaxed_capture.h"

// The frontend calls cuDNN through the functions it finds by this handle: the process's own
// symbols, where libcudnn already is (the course links it).
namespace cudnn_frontend {
void* cudnn_dlhandle = RTLD_DEFAULT;
}  // namespace cudnn_frontend
#endif

namespace course {

namespace {
std::atomic<int64_t> graph_executions{0};
}  // namespace

bool cudnn_graphs_compiled() {
#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
  return true;
#else
  return false;
#endif
}

int64_t cudnn_graph_executions() { return graph_executions; }

#if COURSE_WITH_CUDA && COURSE_WITH_CUDNN_FRONTEND
namespace cudnn_graph {

fe::DataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return fe::DataType_t::FLOAT;
    case DType::kF16:
      return fe::DataType_t::HALF;
    case DType::kBF16:
      return fe::DataType_t::BFLOAT16;
    default:
      COURSE_FAIL("no cuDNN graph type for ", dtype_name(dtype));
  }
}

GraphPtr new_graph(DType io) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(data_type(io))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

std::vector<int64_t> as_vector(const std::array<int64_t, 4>& values) {
  return {values.begin(), values.end()};
}

namespace {

void refuse_unless_good(fe::error_t status, const char* step) {
  if (status.is_bad()) throw PlanRefused(detail::concat(step, ": ", status.get_message()));
}

// The text a kept plan is filed under: what built it (cuDNN's and the frontend's versions, the
// GPU) and the whole validated graph (every tensor's dims, strides and types, the operations'
// attributes, the scalars' values).
std::string stored_plan_key(const fe::graph::Graph& graph, Device device) {
  nlohmann::json description;
  graph.serialize(description);
  return detail::concat("cuDNN ", cudnnGetVersion(), ", frontend ", CUDNN_FRONTEND_VERSION, ", ",
                        device_model(device), "\n", description.dump());
}

// "note: <what>", the first time `said` is passed (one flag per kind of note).
void say_once(std::once_flag& said, const std::string& what) {
  std::call_once(said, [&] { std::fprintf(stderr, "note: %s\n", what.c_str()); });
}

// The plan kept under `key`, loaded into a graph of its own (no build), or none.
std::optional<Plan> kept_plan(const PlanStore& store, const std::string& key,
                              cudnnHandle_t handle) {
  const std::optional<std::string> bytes = store.load(key);
  if (!bytes) return std::nullopt;
  auto graph = std::make_shared<fe::graph::Graph>();
  Plan plan{graph};
  fe::error_t status =
      graph->deserialize(handle, std::vector<uint8_t>(bytes->begin(), bytes->end()),
                         /*enforce_precompiled=*/true, /*run_warmup=*/false);
  if (status.is_good()) status = graph->get_workspace_size(plan.workspace_bytes);
  if (status.is_good()) return plan;
  static std::once_flag said;
  say_once(said, detail::concat("a cuDNN plan kept in ", store.folder().string(), " did not load (",
                                status.get_message(), "); such plans are built again"));
  return std::nullopt;
}

void keep_plan(const PlanStore& store, const std::string& key, const fe::graph::Graph& graph) {
  std::vector<uint8_t> bytes;
  std::string reason;
  fe::error_t status = graph.serialize(bytes, /*serialize_structure=*/false);
  if (status.is_bad()) reason = status.get_message();
  if (status.is_good() &&
      store.save(key, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                 reason)) {
    return;
  }
  static std::once_flag said;
  say_once(said, detail::concat("a cuDNN plan could not be kept in ", store.folder().string(), " (",
                                reason, "); it is built again by the next process"));
}

}  // namespace

Plan finish(GraphPtr graph, cudnnHandle_t handle, Device device) {
  // Building queries the device and may allocate: allowed while a step is captured (its first
  // replay-to-be builds the plan), not part of the graph.
  const RelaxedCaptureMode relaxed;
  refuse_unless_good(graph->validate(), "validating the graph");
  const PlanStore* store = PlanStore::from_environment();
  const std::string key = store != nullptr ? stored_plan_key(*graph, device) : "";
  if (store != nullptr) {
    if (std::optional<Plan> kept = kept_plan(*store, key, handle)) return *kept;
  }
  refuse_unless_good(graph->build_operation_graph(handle), "lowering it");
  refuse_unless_good(graph->create_execution_plans({fe::HeurMode_t::A}), "the heuristics");
  refuse_unless_good(graph->check_support(), "no engine supports it");
  refuse_unless_good(graph->build_plans(), "building its plan");
  Plan plan{graph};
  refuse_unless_good(graph->get_workspace_size(plan.workspace_bytes), "its workspace");
  if (store != nullptr) keep_plan(*store, key, *graph);
  return plan;
}

void execute(const Plan& plan, Device device, cudnnHandle_t handle,
             std::unordered_map<int64_t, void*>& pointers,
             const std::function<std::string()>& what) {
  LibraryWorkspace workspace(device);
  if (plan.workspace_bytes > 0 && !workspace.take(static_cast<size_t>(plan.workspace_bytes))) {
    throw OutOfMemoryError(detail::concat("no memory for the workspace of cuDNN's ", what(), " (",
                                          plan.workspace_bytes, " bytes)"));
  }
  fe::error_t status = plan.graph->execute(handle, pointers, workspace.data());
  COURSE_CHECK(status.is_good(), "cuDNN's ", what(), " failed: ", status.get_message());
  ++graph_executions;
}

void report_refusal(const char* what, const std::string& shape, Device device,
                    const std::string& reason) {
  std::fprintf(stderr, "note: cuDNN has no %s for the %s on %s (%s); the course's kernels run it\n",
               what, shape.c_str(), device.str().c_str(), reason.c_str());
}

}  // namespace cudnn_graph
#endif

}  // namespace course
