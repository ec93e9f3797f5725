// Uploads through a ring of pinned slots.
#include "common/tensor/pinned_staging.h"

#include <cstring>

namespace course {

PinnedStaging::PinnedStaging(int slots) : slots_(slots) {
  COURSE_CHECK(slots > 0, "a pinned staging ring needs a slot, got ", slots);
}

void PinnedStaging::upload_bytes(const void* values, Tensor& dst) {
  const size_t bytes = dst.nbytes();
  if (dst.device().is_cpu()) {
    std::memcpy(dst.data(), values, bytes);
    return;
  }
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  if (slot.done && slot.done->device() != dst.device()) slot = Slot{};
  if (slot.done && !slot.done->query()) slot.done->synchronize();  // the device is far behind
  if (!slot.pinned.defined() || slot.pinned.nbytes() < bytes) {
    slot.pinned = Tensor::empty_pinned({static_cast<int64_t>(bytes)}, DType::kU8);
  }
  if (!slot.done) slot.done = std::make_unique<Event>(dst.device());
  std::memcpy(slot.pinned.data(), values, bytes);
  upload_pinned_async(dst.data(), dst.device(), slot.pinned.data(), bytes);
  slot.done->record();
}

PinnedStaging& thread_staging() {
  thread_local PinnedStaging staging(64);
  return staging;
}

}  // namespace course
