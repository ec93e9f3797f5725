// Graphs on the CPU (a task list) and the GPU (CUDA stream capture).
#include "common/tensor/graph.h"

#include "common/tensor/allocator.h"
#include "common/tensor/capture.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

namespace {

// The capture of one thread: the allocator's private pool and the launchers' recording, both
// ended however the captured work leaves.
class CaptureScope {
 public:
  CaptureScope(int64_t pool, const detail::Capture& capture)
      : allocator_(device_allocator(capture.device)) {
    allocator_.begin_pool_capture(pool);
    detail::begin_capture(capture);
  }
  ~CaptureScope() {
    detail::end_capture();
    allocator_.end_pool_capture();
  }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  CachingAllocator& allocator_;
};

}  // namespace

Graph::Graph(Device device) : device_(device), pool_(device_allocator(device).create_pool()) {}

Graph::~Graph() { release(); }

void Graph::release() {
#if COURSE_WITH_CUDA
  if (cuda_graph_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(cuda_graph_));
  cuda_graph_ = nullptr;
#endif
  host_work_.clear();
  after_replay_.clear();
  device_allocator(device_).release_pool(pool_);
}

void Graph::capture(const std::function<void()>& work) {
  COURSE_CHECK(!captured_, "a graph is captured once; make a new one for other work");
  if (device_.is_cuda()) {
    capture_on_gpu(work);
  } else {
    try {
      CaptureScope scope(
          pool_, {.device = device_, .host_work = &host_work_, .after_replay = &after_replay_});
      work();
    } catch (...) {
      host_work_.clear();
      after_replay_.clear();
      throw;
    }
  }
  captured_ = true;
}

void Graph::capture_on_gpu(const std::function<void()>& work) {
#if COURSE_WITH_CUDA
  // No wait for the earlier work: the capture runs nothing, and each replay is queued after the
  // work before it on the stream that launches it.
  set_current_device(device_);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaSuccess;
  try {
    CaptureScope scope(pool_,
                       {.device = device_, .cuda_stream = stream, .after_replay = &after_replay_});
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      work();
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);  // abandons the partial graph
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      after_replay_.clear();
      throw;
    }
    status = cudaStreamEndCapture(stream, &graph);
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  CUDA_CHECK(status);
  cudaGraphExec_t exec = nullptr;
  status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(status);
  cuda_graph_ = exec;
#else
  COURSE_FAIL("a graph on ", device_.str(), " in a build without CUDA");
#endif
}

void Graph::replay() {
  COURSE_CHECK(captured_, "replay of a graph that was not captured");
  check_not_capturing("a graph replay");
#if COURSE_WITH_CUDA
  if (cuda_graph_) {
    set_current_device(device_);
    CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(cuda_graph_), nullptr));
  }
#endif
  if (!cuda_graph_) {
    for (const auto& work : host_work_) work();
  }
  for (const detail::ReplayHook& hook : after_replay_) hook.run();
}

}  // namespace course
