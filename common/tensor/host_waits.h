// Counting the places where the host waits for an accelerator (a GPU, or the simulated one of
// device.h): a tensor's values read on the host (to_vector, a reduction whose result comes
// back, a copy to host memory), a stream or event synchronised, and a synchronous copy from the
// host (cudaMemcpy, or an asynchronous one from pageable memory, which CUDA stages through a
// pinned buffer before it returns). On a GPU each stalls the host until the queued work is done
// and leaves the GPU idle while the host catches up, so a training step should have none except
// every N steps (--log-every). The CPU never waits for itself: its work counts nothing, and the
// tests of a step's waits run on the simulated accelerator, which counts exactly as a GPU would.
// Counted per thread (the loader's workers copy on threads of their own).
#pragma once

#include <cstdint>
#include <string>

#include "common/tensor/device.h"

namespace course {

struct HostWaits {
  int64_t reads = 0;             // values copied to the host
  int64_t synchronizations = 0;  // Stream::synchronize, Event::synchronize
  int64_t copies = 0;            // synchronous copies from host memory to the device

  int64_t total() const { return reads + synchronizations + copies; }
  bool operator==(const HostWaits&) const = default;
  std::string str() const;  // "2 reads, 1 synchronisation, 0 copies"
  HostWaits operator-(const HostWaits& earlier) const {
    return {reads - earlier.reads, synchronizations - earlier.synchronizations,
            copies - earlier.copies};
  }
  HostWaits& operator+=(const HostWaits& more) {
    reads += more.reads;
    synchronizations += more.synchronizations;
    copies += more.copies;
    return *this;
  }
};

// Each counts only when `device` is an accelerator.
void note_host_read(Device device);
void note_host_synchronization(Device device);
void note_host_copy(Device device);
HostWaits host_waits();  // this thread's, since it started

}  // namespace course
