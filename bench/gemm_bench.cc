// GEMM throughput on the CPU (oneDNN sgemm through course::gemm): the compute ceiling that
// later layer and training figures are stated against. Reports GFLOP/s = 2*M*N*K / time.
#include <benchmark/benchmark.h>

#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"

namespace course {
namespace {

void BM_Gemm(benchmark::State& state, DType dtype) {
  const int64_t n = state.range(0);
  Tensor a = Tensor::empty({n, n}, dtype), b = Tensor::empty({n, n}, dtype);
  Tensor c = Tensor::empty({n, n}, dtype);
  fill_(a, 0.5);
  fill_(b, 0.25);
  for (auto _ : state) {
    gemm(a, false, b, false, c);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

BENCHMARK_CAPTURE(BM_Gemm, f32, DType::kF32)
    ->RangeMultiplier(2)
    ->Range(128, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gemm, bf16_widened, DType::kBF16)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace course
