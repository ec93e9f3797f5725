// Small host values sent to the device every step without the host waiting: a step's learning
// rate and other optimizer scalars, a batch of token ids made on the host. A copy from pageable
// memory would stall the host (CUDA stages it through a pinned buffer before returning), so each
// upload goes through one of a few pinned slots, copied asynchronously on the compute stream; a
// slot is written again only once the copy from it is done (its event). The host waits, and the
// wait is counted (host_waits.h), only when the device is that many uploads behind.
#pragma once

#include <memory>
#include <vector>

#include "common/tensor/stream.h"
#include "common/tensor/tensor.h"

namespace course {

class PinnedStaging {
 public:
  explicit PinnedStaging(int slots = 4);

  // Copies `values` into `dst` (contiguous, of the same element count and type) on its device.
  template <class T>
  void upload(const std::vector<T>& values, Tensor& dst) {
    COURSE_CHECK(DTypeOf<T>::value == dst.dtype() &&
                     static_cast<int64_t>(values.size()) == dst.numel() &&
                     dst.memory_format() == MemoryFormat::kContiguous,
                 "upload of ", values.size(), " values into ", dst.str());
    upload_bytes(values.data(), dst);
  }

 private:
  struct Slot {
    Tensor pinned;                // u8, at least as large as the last upload through it
    std::unique_ptr<Event> done;  // recorded after the copy from it
  };
  void upload_bytes(const void* values, Tensor& dst);

  std::vector<Slot> slots_;
  size_t next_ = 0;
};

// This thread's staging ring for the small uploads of a step (augmentation draws, mixing plans):
// enough slots for several uploads a step, several steps ahead of the device.
PinnedStaging& thread_staging();

// A new tensor of `shape` on `device` holding `values`, uploaded through thread_staging().
template <class T>
Tensor upload_to(Device device, const std::vector<T>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DTypeOf<T>::value, device);
  thread_staging().upload(values, t);
  return t;
}

}  // namespace course
