// A scope in which this thread may make calls that are not stream work (cudaMalloc, a library
// handle's creation) while it captures a graph: the driver refuses them in the thread-local
// capture mode Graph uses, and allows them in the relaxed one, outside the captured graph.
// Include only from code compiled with COURSE_WITH_CUDA.
#pragma once

#include <cuda_runtime.h>

namespace course {

class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // the thread's mode while open
};

}  // namespace course
