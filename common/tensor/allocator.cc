// Caching allocators per device.
#include "common/tensor/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/tensor/capture.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#include "common/tensor/relaxed_capture.h"
#endif

namespace course {

namespace {

constexpr size_t kSmallGranularity = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;
constexpr size_t kLargeGranularity = size_t{2} << 20;

void* host_allocate(size_t bytes, int) { return std::aligned_alloc(64, bytes); }
void host_release(void* ptr, int) { std::free(ptr); }

#if COURSE_WITH_CUDA
// cudaMalloc is not a stream operation, so it may run while this thread captures a graph.
void* cuda_allocate(size_t bytes, int device) {
  void* ptr = nullptr;
  bool failed = false;
  {
    const RelaxedCaptureMode relaxed;
    set_current_device(Device::cuda(device));
    failed = cudaMalloc(&ptr, bytes) != cudaSuccess;
  }
  if (failed) {
    cudaGetLastError();  // an out-of-memory error is not sticky: clear it and report nullptr
    return nullptr;
  }
  return ptr;
}
void cuda_release(void* ptr, int device) {
  set_current_device(Device::cuda(device));
  cudaFree(ptr);
}

// Page-locked memory belongs to the context of the device current when it is allocated: the
// process's GPU, whichever thread asks. Only a lack of memory is out-of-memory (nullptr); any
// other failure is reported as itself.
void* pinned_allocate(size_t bytes, int) {
  enter_process_device();
  void* ptr = nullptr;
  const cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  CUDA_CHECK(status);
  return ptr;
}
void pinned_release(void* ptr, int) { cudaFreeHost(ptr); }
#endif

}  // namespace

CachingAllocator::CachingAllocator(std::string name, Backend backend)
    : name_(std::move(name)), backend_(backend) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  for (auto& [id, free] : pools_) cached_.merge(free);
  release_cached_locked();
}

size_t CachingAllocator::rounded_size(size_t bytes) {
  const size_t granularity = bytes < kLargeThreshold ? kSmallGranularity : kLargeGranularity;
  return (bytes + granularity - 1) / granularity * granularity;
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  COURSE_CHECK(bytes <= (size_t{1} << 62), "cannot allocate ", format_bytes(bytes), " on ", name_);
  const size_t block = rounded_size(bytes);
  std::lock_guard lock(mutex_);
  if (backend_.pooled_in_capture && capturing() && !capture_thread_locked()) {
    refuse_in_capture(detail::concat("an allocation of ", format_bytes(bytes), " on ", name_,
                                     ", outside the graph's pool"));
  }
  ++stats_.allocations;
  const int64_t pool = capture_thread_locked() ? capture_pool_ : 0;
  size_t size = block;
  // A free block of the pool, else of the shared cache (free now, so the pool may own it).
  void* ptr = pool != 0 ? take_cached(pools_.at(pool), block, &size) : nullptr;
  if (ptr == nullptr) ptr = take_cached(cached_, block, &size);
  if (ptr != nullptr) {
    ++stats_.cache_hits;
  } else {
    ptr = allocate_from_system(block, bytes);
  }
  in_use_[ptr] = {size, bytes, pool};
  stats_.allocated += static_cast<int64_t>(size);
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  stats_.requested += static_cast<int64_t>(bytes);
  stats_.peak_requested = std::max(stats_.peak_requested, stats_.requested);
  return ptr;
}

// A cached block of the same size, or at most a quarter larger; nullptr if there is none.
void* CachingAllocator::take_cached(FreeBlocks& free, size_t block, size_t* size) {
  auto it = free.lower_bound(block);
  if (it == free.end() || it->first > block + block / 4) return nullptr;
  *size = it->first;
  void* ptr = it->second;
  free.erase(it);
  return ptr;
}

bool CachingAllocator::capture_thread_locked() const {
  return capture_pool_ != 0 && capture_thread_ == std::this_thread::get_id();
}

void* CachingAllocator::allocate_from_system(size_t block, size_t requested) {
  const auto over_limit = [&] {
    return limit_ > 0 && stats_.reserved + static_cast<int64_t>(block) > limit_;
  };
  // Freeing memory synchronises the GPU, which a thread that is capturing must not do.
  const bool may_release = !capture_thread_locked();
  if (over_limit() && may_release) release_cached_locked();
  void* ptr = over_limit() ? nullptr : backend_.allocate(block, backend_.device);
  if (ptr == nullptr && !cached_.empty() && may_release) {
    release_cached_locked();  // fragmentation: give the cache back and try once more
    ptr = over_limit() ? nullptr : backend_.allocate(block, backend_.device);
  }
  if (ptr == nullptr) {
    throw OutOfMemoryError(detail::concat(
        "out of memory on ", name_, ": tried to allocate ", format_bytes(requested), " (",
        format_bytes(stats_.allocated), " allocated, ", format_bytes(stats_.reserved), " reserved",
        limit_ > 0 ? ", limit " + format_bytes(limit_) : std::string(), ")"));
  }
  stats_.reserved += static_cast<int64_t>(block);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(ptr);
  COURSE_CHECK(it != in_use_.end(), "pointer was not allocated by the ", name_, " allocator");
  const auto [size, requested, pool] = it->second;
  stats_.allocated -= static_cast<int64_t>(size);
  stats_.requested -= static_cast<int64_t>(requested);
  auto owner = pools_.find(pool);
  (owner != pools_.end() ? owner->second : cached_).emplace(size, ptr);
  in_use_.erase(it);
}

int64_t CachingAllocator::create_pool() {
  std::lock_guard lock(mutex_);
  pools_[next_pool_];
  return next_pool_++;
}

void CachingAllocator::begin_pool_capture(int64_t pool) {
  std::lock_guard lock(mutex_);
  COURSE_CHECK(pools_.count(pool), "no memory pool ", pool, " on ", name_);
  COURSE_CHECK(capture_pool_ == 0, "a capture into pool ", capture_pool_, " is under way on ",
               name_);
  capture_pool_ = pool;
  capture_thread_ = std::this_thread::get_id();
}

void CachingAllocator::end_pool_capture() {
  std::lock_guard lock(mutex_);
  capture_pool_ = 0;
}

void CachingAllocator::release_pool(int64_t pool) {
  std::lock_guard lock(mutex_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  COURSE_CHECK(capture_pool_ != pool, "pool ", pool, " released during its capture");
  cached_.merge(it->second);
  pools_.erase(it);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
  stats_.peak_requested = stats_.requested;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::set_limit(int64_t bytes) {
  COURSE_CHECK(bytes >= 0, "memory limit must not be negative");
  std::lock_guard lock(mutex_);
  limit_ = bytes;
}

void CachingAllocator::release_cached_locked() {
  for (auto& [size, ptr] : cached_) {
    backend_.release(ptr, backend_.device);
    stats_.reserved -= static_cast<int64_t>(size);
  }
  cached_.clear();
}

CachingAllocator& device_allocator(Device device) {
  if (device.is_cpu()) {
    static CachingAllocator cpu(
        "cpu", {.allocate = host_allocate, .release = host_release, .pooled_in_capture = false});
    return cpu;
  }
  require_device(device);
  if (device.is_sim()) {
    static std::mutex mutex;
    static std::vector<std::unique_ptr<CachingAllocator>> sims(kSimDevices);
    std::lock_guard lock(mutex);
    auto& slot = sims[device.index];
    if (!slot) {
      slot = std::make_unique<CachingAllocator>(
          device.str(), CachingAllocator::Backend{host_allocate, host_release, device.index});
    }
    return *slot;
  }
#if COURSE_WITH_CUDA
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CachingAllocator>> gpus(cuda_device_count());
  std::lock_guard lock(mutex);
  auto& slot = gpus[device.index];
  if (!slot)
    slot = std::make_unique<CachingAllocator>(
        device.str(), CachingAllocator::Backend{cuda_allocate, cuda_release, device.index});
  return *slot;
#else
  COURSE_FAIL("unreachable: ", device.str(), " passed require_device in a CPU-only build");
#endif
}

bool pinned_memory_is_page_locked() { return cuda_device_count() > 0; }

CachingAllocator& pinned_host_allocator() {
#if COURSE_WITH_CUDA
  if (pinned_memory_is_page_locked()) {
    static CachingAllocator pinned("pinned host", {pinned_allocate, pinned_release});
    return pinned;
  }
#endif
  // Plain memory plays the part: the simulated accelerator copies from it without a host wait.
  static CachingAllocator plain("pinned host (not page-locked: no GPU)",
                                {host_allocate, host_release});
  return plain;
}

}  // namespace course
