// Caching allocator: statistics, reuse, peaks, limits, out-of-memory errors and the private
// pools of captured graphs.
#include "common/tensor/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "common/core/error.h"
#include "common/tensor/tensor.h"

namespace course {
namespace {

using ::testing::HasSubstr;

CachingAllocator::Backend host_backend() {
  return {[](size_t bytes, int) { return std::aligned_alloc(64, bytes); },
          [](void* ptr, int) { std::free(ptr); }, 0};
}

TEST(CachingAllocator, CountsAllocatedReservedAndPeaks) {
  CachingAllocator a("test", host_backend());
  void* p = a.allocate(1000);     // rounds up to 1024
  void* q = a.allocate(3 << 20);  // 3 MiB: rounds up to 4 MiB
  EXPECT_EQ(a.stats().allocated, 1024 + (4 << 20));
  EXPECT_EQ(a.stats().requested, 1000 + (3 << 20));
  a.deallocate(q);
  EXPECT_EQ(a.stats().allocated, 1024);
  EXPECT_EQ(a.stats().requested, 1000);
  EXPECT_EQ(a.stats().peak_requested, 1000 + (3 << 20));
  EXPECT_EQ(a.stats().reserved, 1024 + (4 << 20));  // the freed block stays cached
  EXPECT_EQ(a.stats().peak_allocated, 1024 + (4 << 20));
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_allocated, 1024);
  EXPECT_EQ(a.stats().peak_requested, 1000);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 1024);
  a.deallocate(p);
  EXPECT_EQ(a.stats().allocated, 0);
  EXPECT_EQ(a.allocate(0), nullptr);
}

TEST(CachingAllocator, ReusesFreedBlocksOfTheSameSize) {
  CachingAllocator a("test", host_backend());
  void* p = a.allocate(5000);
  a.deallocate(p);
  void* q = a.allocate(4900);  // same 5120-byte block
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().requested, 4900);  // what was asked for, whichever block serves it
  EXPECT_EQ(a.stats().cache_hits, 1);
  void* big = a.allocate(100000);  // far larger: not served by the small cached block
  EXPECT_NE(big, p);
  a.deallocate(q);
  a.deallocate(big);
  EXPECT_EQ(a.stats().allocations, 3);
}

TEST(CachingAllocator, LimitTurnsIntoAnOutOfMemoryErrorWithFigures) {
  CachingAllocator a("test", host_backend());
  a.set_limit(1 << 20);
  void* p = a.allocate(600 << 10);
  try {
    a.allocate(600 << 10);
    FAIL() << "allocation over the limit succeeded";
  } catch (const OutOfMemoryError& e) {
    EXPECT_THAT(e.what(), HasSubstr("out of memory on test: tried to allocate 600.00 KiB"));
    EXPECT_THAT(e.what(), HasSubstr("limit 1.00 MiB"));
  }
  a.deallocate(p);
  void* again = a.allocate(900 << 10);  // the cache is released to make room
  EXPECT_NE(again, nullptr);
  a.deallocate(again);
  EXPECT_THROW(a.deallocate(&a), Error);  // not one of its blocks
}

TEST(CachingAllocator, ASizeNoSystemHasIsAnErrorNotACrash) {
  CachingAllocator a("test", host_backend());
  EXPECT_THROW(a.allocate(size_t{1} << 50), OutOfMemoryError);  // 1 PiB
  EXPECT_THROW(a.allocate(size_t{1} << 63), Error);
}

// The GPU's own allocator (skipped without a GPU): over a limit, its cache is released and the
// allocation retried; a size no GPU has is an out-of-memory error that leaves the GPU usable.
TEST(CachingAllocator, AGpuOutOfMemoryReleasesTheCacheRetriesAndRecovers) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << cuda_status();
  const Device gpu = Device::cuda(0);
  CachingAllocator& allocator = device_allocator(gpu);
  allocator.empty_cache();
  allocator.set_limit(allocator.stats().reserved + (8 << 20));
  { Tensor cached = Tensor::empty({1 << 20}, DType::kF32, gpu); }  // 4 MiB, kept in the cache
  EXPECT_EQ(allocator.stats().reserved - allocator.stats().allocated, 4 << 20);
  {
    Tensor larger = Tensor::empty({3 << 19}, DType::kF32, gpu);  // 6 MiB: fits once 4 are freed
    EXPECT_EQ(larger.numel(), 3 << 19);
  }
  EXPECT_THROW(Tensor::empty({4 << 20}, DType::kF32, gpu), OutOfMemoryError);  // 16 MiB
  allocator.set_limit(0);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 48}, DType::kF32, gpu), OutOfMemoryError);  // 1 PiB
  Tensor after = Tensor::from_vector<float>({1.5f, -2.0f}, {2}, gpu);
  EXPECT_EQ(after.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
}

TEST(CachingAllocator, TensorsReportToTheirDeviceAllocator) {
  CachingAllocator& cpu = device_allocator(Device::cpu());
  const int64_t before = cpu.stats().allocated;
  {
    Tensor t = Tensor::empty({1024, 1024});  // 4 MiB
    EXPECT_EQ(cpu.stats().allocated - before, 4 << 20);
  }
  EXPECT_EQ(cpu.stats().allocated, before);
}

// Without a GPU the pinned allocator's blocks are plain host memory, still told apart from the
// CPU allocator's (the simulated accelerator copies from them without a host wait).
TEST(PinnedHost, FallsBackToPlainHostMemoryWithoutAGpu) {
  Tensor pinned = Tensor::empty_pinned({16}, DType::kU8);
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(Tensor::empty({16}, DType::kU8).is_pinned());
  EXPECT_EQ(pinned_memory_is_page_locked(), cuda_device_count() > 0);
  EXPECT_EQ(pinned.device(), Device::cpu());
}

TEST(CachingAllocatorPool, KeepsACapturesBlocksFromLaterWork) {
  CachingAllocator a("test", host_backend());
  void* before = a.allocate(4096);
  a.deallocate(before);  // free in the shared cache: a capture may take it
  const int64_t pool = a.create_pool();
  a.begin_pool_capture(pool);
  void* captured = a.allocate(4096);
  EXPECT_EQ(captured, before);
  void* temporary = a.allocate(8192);
  a.deallocate(temporary);
  EXPECT_EQ(a.allocate(8192), temporary);  // reused within the capture
  a.deallocate(captured);                  // back to the pool, not to the shared cache
  a.end_pool_capture();
  void* later = a.allocate(4096);
  EXPECT_NE(later, captured);
  EXPECT_NE(a.allocate(8192), temporary);
  a.release_pool(pool);
  EXPECT_EQ(a.allocate(4096), captured);  // the released pool's free block is shared again
  a.deallocate(later);
}

TEST(CachingAllocatorPool, BlocksInUseAtReleaseReturnToTheSharedCache) {
  CachingAllocator a("test", host_backend());
  const int64_t pool = a.create_pool();
  a.begin_pool_capture(pool);
  void* held = a.allocate(4096);
  a.end_pool_capture();
  a.release_pool(pool);
  a.deallocate(held);
  EXPECT_EQ(a.allocate(4096), held);
}

TEST(CachingAllocatorPool, OnlyTheCapturingThreadAllocatesFromThePool) {
  CachingAllocator a("test", host_backend());
  const int64_t pool = a.create_pool();
  a.begin_pool_capture(pool);
  void* other = nullptr;
  std::thread([&] {
    other = a.allocate(4096);
    a.deallocate(other);  // a shared block: eager work may reuse it
  }).join();
  void* captured = a.allocate(4096);
  a.deallocate(captured);
  a.end_pool_capture();
  EXPECT_EQ(captured, other);  // taken from the shared cache while free
  void* eager = a.allocate(4096);
  EXPECT_NE(eager, captured);  // now the pool's
  EXPECT_THROW(a.begin_pool_capture(pool + 1), Error);
  a.begin_pool_capture(pool);
  EXPECT_THROW(a.begin_pool_capture(pool), Error);
  EXPECT_THROW(a.release_pool(pool), Error);
  a.end_pool_capture();
}

}  // namespace
}  // namespace course
