// One library handle (cuBLAS, cuDNN) per thread and GPU, created on first use: handles are
// not safe to share between threads, and each is bound to the device current at creation.
// Include only from code compiled with COURSE_WITH_CUDA (with //common/tensor:cuda_check).
#pragma once

#include <cudnn.h>

#include <map>

#include "common/tensor/capture.h"
#include "common/tensor/cuda_check.h"
#include "common/tensor/device.h"
#include "common/tensor/relaxed_capture.h"

namespace course {

// `create(&handle)` makes a handle with `device` current; each Handle type has its own table.
template <class Handle, class Create>
Handle thread_handle(Device device, Create create) {
  thread_local std::map<int, Handle> handles;
  auto it = handles.find(device.index);
  if (it != handles.end()) return it->second;
  set_current_device(device);
  Handle handle;
  {
    // Creating a handle allocates device memory: allowed while a graph is captured (the first
    // product of a captured step makes its thread's handle), not part of the graph.
    const RelaxedCaptureMode relaxed;
    create(&handle);
  }
  return handles[device.index] = handle;
}

// This thread's cuDNN handle for `device`, issuing its work on the thread's current stream.
inline cudnnHandle_t cudnn_handle(Device device) {
  check_capture_device(device);
  cudnnHandle_t handle =
      thread_handle<cudnnHandle_t>(device, [](cudnnHandle_t* h) { CUDNN_CHECK(cudnnCreate(h)); });
  CUDNN_CHECK(cudnnSetStream(handle, static_cast<cudaStream_t>(current_cuda_stream())));
  return handle;
}

}  // namespace course
