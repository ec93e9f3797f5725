// Graph capture: while a Graph (graph.h) records a training step, the work the launchers would
// run is recorded instead, to be replayed later on the same memory.
//
// On the GPU this is CUDA stream capture: kernels and copies go to the thread's capture stream
// (current_cuda_stream()) and become graph nodes. On the CPU, where work is synchronous, the
// launchers hand their loops to run_host_work(), which appends them to the graph's task list.
// Either way the host code that issues the work runs only once, during the capture: a value
// read back to the host, or host data copied in, would be baked into every replay. Those calls
// go through check_not_capturing(), which throws GraphCaptureError instead.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/core/error.h"
#include "common/tensor/device.h"

namespace course {

class GraphCaptureError : public Error {
 public:
  using Error::Error;
};

// Whether this thread is capturing work into a graph.
bool capturing();
// Whether that graph is a CPU graph (a task list: the CPU or the simulated accelerator).
bool capturing_on_host();
// Throws GraphCaptureError when this thread is capturing: `what` cannot be captured.
void check_not_capturing(std::string_view what);
// Throws GraphCaptureError when this thread is capturing: `call` is one CUDA's stream capture
// refuses (a synchronisation, an event's query, an allocation outside the graph's pool), which
// on a GPU would invalidate the capture. Every device refuses it alike, the simulated one too.
void refuse_in_capture(std::string_view call);
// Throws GraphCaptureError when this thread is capturing a graph of another device than `device`.
void check_capture_device(Device device);

// The stream this thread's GPU work goes to: the capture stream during a GPU capture, else the
// stream of the innermost StreamScope, else nullptr (the legacy default stream). A cudaStream_t.
void* current_cuda_stream();

// While it lives, the kernels this thread launches go to `stream` (a GPU's; nothing changes
// on the CPU and the simulated accelerator, whose work runs at once), as PyTorch's
// `with torch.cuda.stream(s):` does: the data path's decoding kernels run on the copy stream,
// beside the step's work, not after it. Not during a graph capture.
class StreamScope {
 public:
  explicit StreamScope(void* cuda_stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* previous_;
};

namespace detail {

// Host code a graph runs after each replay is queued: a communicator's watch over the
// collectives the graph holds, which no host call waits for. One per owner.
struct ReplayHook {
  const void* owner;
  std::function<void()> run;
};

// The capture of one thread, begun and ended by Graph::capture.
struct Capture {
  Device device;
  std::vector<std::function<void()>>* host_work = nullptr;  // CPU: the graph's task list
  void* cuda_stream = nullptr;                              // GPU: the capturing stream
  std::vector<ReplayHook>* after_replay = nullptr;          // the graph's replay hooks
};
void begin_capture(const Capture& capture);
void end_capture();
void record_host_work(std::function<void()> work);
// Adds `owner`'s hook to the graph being captured, unless it has one already.
void after_each_replay(const void* owner, std::function<void()> hook);

}  // namespace detail

// Runs CPU work now, or appends it to the CPU graph this thread is capturing (the work is then
// copied: it must hold pointers and values, not references to the caller's locals).
template <class Work>
void run_host_work(Work&& work) {
  if (capturing()) {
    detail::record_host_work(std::forward<Work>(work));
  } else {
    work();
  }
}

}  // namespace course
