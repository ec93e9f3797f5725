// A GPU library's workspace (cuDNN, cuBLASLt) from the device's caching allocator, returned
// when the call that used it is done: the next user of the block is queued on the same stream,
// after that call. take() reports a lack of memory instead of throwing, so the caller can fall
// back to an algorithm that needs less (algorithm_choice.h).
#pragma once

#include <cstddef>
#include <utility>

#include "common/tensor/allocator.h"

namespace course {

class LibraryWorkspace {
 public:
  explicit LibraryWorkspace(Device device) : allocator_(device_allocator(device)) {}
  ~LibraryWorkspace() { allocator_.deallocate(data_); }
  LibraryWorkspace(const LibraryWorkspace&) = delete;
  LibraryWorkspace& operator=(const LibraryWorkspace&) = delete;

  // Replaces the workspace by one of `bytes`; false when the device has not that much left.
  bool take(size_t bytes) {
    allocator_.deallocate(std::exchange(data_, nullptr));
    bytes_ = 0;
    try {
      data_ = allocator_.allocate(bytes);
    } catch (const OutOfMemoryError&) {
      return false;
    }
    bytes_ = bytes;
    return true;
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  CachingAllocator& allocator_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace course
