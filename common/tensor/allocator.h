// Caching allocators, one per device, with the statistics the labs print.
//
// Freed blocks are kept and handed out again for requests of (nearly) the same size, as
// PyTorch's CUDA allocator does, so a training loop that allocates the same activations every
// step stops calling cudaMalloc after the first one. `allocated` counts blocks in use,
// `reserved` adds the cached ones; both have peaks that reset_peak() restarts, which is what
// "max memory allocated" reports. `requested` counts the bytes the blocks in use were asked for
// (before rounding to the allocator's granularity: what an algorithm itself needs). A limit makes a
// device behave as if it had less memory, so out-of-memory handling can be exercised (and taught)
// on any machine.
//
// Private pools hold the memory of captured graphs (graph.h): a replay writes to the addresses
// the capture was given, so those blocks must never be handed to other work. While a thread
// captures into a pool, its allocations come from that pool (or fresh from the system) and its
// frees go back to it; other threads and later eager work never see those blocks until the
// pool is released with its graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/tensor/device.h"

namespace course {

struct MemoryStats {
  int64_t allocated = 0;       // bytes in blocks handed out and not yet freed
  int64_t peak_allocated = 0;  // the most `allocated` has been since the last reset_peak()
  int64_t reserved = 0;        // allocated plus cached bytes obtained from the system
  int64_t peak_reserved = 0;
  int64_t requested = 0;  // bytes asked for by the blocks in use (allocated before rounding)
  int64_t peak_requested = 0;
  int64_t allocations = 0;  // allocate() calls since the start
  int64_t cache_hits = 0;   // of which were served from the cache
};

class CachingAllocator {
 public:
  struct Backend {
    void* (*allocate)(size_t bytes, int device);  // nullptr when the system has no memory left
    void (*release)(void* ptr, int device);
    int device = 0;  // the GPU index the calls are made on
    // A thread capturing a graph may take this memory only from its graph's pool, as CUDA's
    // capture refuses cudaMalloc and cudaHostAlloc: an accelerator's and page-locked memory
    // (the CPU's own is plain host memory, which a captured step may allocate).
    bool pooled_in_capture = true;
  };

  CachingAllocator(std::string name, Backend backend);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (64-byte aligned); throws OutOfMemoryError when neither the
  // cache, the system nor the limit allow it. Zero bytes gives nullptr.
  void* allocate(size_t bytes);
  void deallocate(void* ptr);

  MemoryStats stats() const;
  void reset_peak();
  void empty_cache();             // returns every cached block to the system
  void set_limit(int64_t bytes);  // caps `reserved`; 0 removes the cap
  const std::string& name() const { return name_; }

  static size_t rounded_size(size_t bytes);  // the block size a request of `bytes` uses

  // A new private pool (ids start at 1).
  int64_t create_pool();
  // Routes the calling thread's allocations and frees to `pool` until end_pool_capture().
  void begin_pool_capture(int64_t pool);
  void end_pool_capture();
  // Gives the pool's free blocks to the shared cache; its blocks still in use follow when freed.
  void release_pool(int64_t pool);

 private:
  using FreeBlocks = std::multimap<size_t, void*>;  // by size
  struct Block {
    size_t size;
    size_t requested;
    int64_t pool;  // 0: the shared cache
  };
  static void* take_cached(FreeBlocks& free, size_t block, size_t* size);
  bool capture_thread_locked() const;
  void* allocate_from_system(size_t block, size_t requested);
  void release_cached_locked();

  std::string name_;
  Backend backend_;
  mutable std::mutex mutex_;
  FreeBlocks cached_;                    // the shared cache
  std::map<int64_t, FreeBlocks> pools_;  // live private pools
  std::unordered_map<void*, Block> in_use_;
  int64_t next_pool_ = 1;
  int64_t capture_pool_ = 0;  // the pool being captured into, 0 when none
  std::thread::id capture_thread_;
  MemoryStats stats_;
  int64_t limit_ = 0;
};

// The allocator of `device` (created on first use; the device must be available).
CachingAllocator& device_allocator(Device device);

// Page-locked host memory for fast, asynchronous host-to-GPU copies; plain aligned host memory
// when no GPU is visible, which the simulated accelerator treats as page-locked (its copies from
// there are asynchronous, those from other host memory host waits).
CachingAllocator& pinned_host_allocator();
bool pinned_memory_is_page_locked();

}  // namespace course
