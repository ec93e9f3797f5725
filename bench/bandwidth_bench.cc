// Memory bandwidth of bandwidth-bound kernels on the CPU: the ceiling for elementwise work.
// Reports GB/s of bytes read plus written, on arrays far larger than the caches.
#include <benchmark/benchmark.h>

#include <cstring>

#include "common/kernels/elementwise.h"
#include "common/kernels/reduce.h"

namespace course {
namespace {

constexpr int64_t kElements = int64_t{64} << 20;  // 256 MiB of f32 per array

void set_bytes(benchmark::State& state, int64_t bytes_per_iteration) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes_per_iteration),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

// y += a * x: reads x and y, writes y.
void BM_Axpy(benchmark::State& state) {
  Tensor x = zeros({kElements}), y = zeros({kElements});
  for (auto _ : state) axpy_(0.5f, x, y);
  set_bytes(state, 3 * kElements * 4);
}

// Sum of all elements: reads x once.
void BM_Sum(benchmark::State& state) {
  Tensor x = zeros({kElements});
  for (auto _ : state) benchmark::DoNotOptimize(sum(x));
  set_bytes(state, kElements * 4);
}

// The C library's memcpy as the reference: reads and writes once.
void BM_Memcpy(benchmark::State& state) {
  Tensor x = zeros({kElements}), y = zeros({kElements});
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), x.nbytes());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * kElements * 4);
}

BENCHMARK(BM_Axpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Sum)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace course
