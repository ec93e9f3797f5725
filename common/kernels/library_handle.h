// One library handle (cuBLAS, cuDNN) per thread and GPU, created on first use: handles are
// not safe to share between threads, and each is bound to the device current at creation.
// Include only from code compiled with COURSE_WITH_CUDA.
#pragma once

#include <map>

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

}  // namespace course
