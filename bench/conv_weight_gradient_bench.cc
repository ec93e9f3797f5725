// The weight gradient of ResNet-18's 3x3 convolutions at 64 px, batch 32, on the CPU, by either
// route the dispatch can take: oneDNN's direct kernel (then its blocked result reordered and
// added) or one sgemm over the output positions (conv2d_gemm_weights.cc). Where the second wins
// is where common/kernels/conv2d.cc takes it.
#include <benchmark/benchmark.h>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

// Arguments: channels (in = out), the output plane's side, the route (0: oneDNN, 1: sgemm).
void BM_ConvWeightGradient(benchmark::State& state) {
  const int64_t channels = state.range(0), side = state.range(1), batch = 32;
  const Conv2dShape conv{.stride = 1, .padding = 1};
  const Tensor x =
      testing::random_tensor({batch, channels, side, side}, DType::kF32, Device::cpu(), 1).tensor;
  const Tensor dy =
      testing::random_tensor({batch, channels, side, side}, DType::kF32, Device::cpu(), 2).tensor;
  Tensor dw = zeros({channels, channels, 3, 3}, DType::kF32, Device::cpu());
  for (auto _ : state) {
    if (state.range(2) == 1) {
      detail::gemm_conv2d_backward_weights_add(dy, x, dw, conv);
    } else {
      Tensor fresh = Tensor::empty(dw.shape(), DType::kF32, Device::cpu());
      detail::onednn_conv2d_backward_weights(dy, x, fresh, conv);
      axpy_(1.0f, fresh, dw);
    }
    benchmark::DoNotOptimize(dw.data());
  }
  state.SetLabel(state.range(2) == 1 ? "sgemm" : "oneDNN direct");
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * batch * side * side * channels * channels * 9,
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_ConvWeightGradient)
    ->ArgsProduct({{64}, {16}, {0, 1}})
    ->ArgsProduct({{128}, {8}, {0, 1}})
    ->ArgsProduct({{256}, {4}, {0, 1}})
    ->ArgsProduct({{512}, {2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace course
