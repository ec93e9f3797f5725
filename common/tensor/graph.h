// A captured step of device work, replayed with one call: CUDA graphs on the GPU (the C++
// analog of torch.compile(mode="reduce-overhead")), a recorded task list on the CPU.
//
// capture(work) runs the host code of `work` once and records the device work it issues
// without running it; replay() then runs that device work again, on the same memory, with no
// host code in between: no launch overhead, no allocator calls, no shape checks. Whatever
// changes between replays must therefore live in device memory the graph reads: copy the next
// batch into the tensors the capture used, keep the learning rate in a device scalar. Reading a
// device value on the host, or copying host data in, throws GraphCaptureError during a
// capture (capture.h). Memory the capture allocates comes from the graph's private pool and
// stays reserved while the graph lives. Collectives are captured too (communicator.h): NCCL's
// on their stream, with a watch over each replay's after it is queued; the MPI engine's as tasks
// of a CPU graph.
//
// The CPU graph exists so the same step code is exercised and tested on machines without a
// GPU; it saves no launch overhead worth measuring.
#pragma once

#include <functional>
#include <vector>

#include "common/tensor/capture.h"
#include "common/tensor/device.h"

namespace course {

class Graph {
 public:
  explicit Graph(Device device);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Records the device work of `work`; once per graph. If `work` throws, nothing is kept.
  void capture(const std::function<void()>& work);
  void replay();  // runs the recorded work, ordered after earlier work on the device
  bool captured() const { return captured_; }
  Device device() const { return device_; }

 private:
  void capture_on_gpu(const std::function<void()>& work);
  void release();

  Device device_;
  int64_t pool_;
  bool captured_ = false;
  std::vector<std::function<void()>> host_work_;  // the CPU graph
  std::vector<detail::ReplayHook> after_replay_;
  void* cuda_graph_ = nullptr;  // cudaGraphExec_t
};

}  // namespace course
