// The weight gradient of 3x3 convolutions on the CPU (ResNet-18's at 64 px, batch 32, and the
// small network's at 28 px, batch 128), by either route: oneDNN's direct kernel (then its
// blocked result reordered and added) or one sgemm over the output positions
// (conv2d_gemm_weights.cc). The dispatch takes the sgemm at 2 x 2 output planes, where it won on
// every machine measured (bench/RESULTS.md).
#include <benchmark/benchmark.h>

#include "common/kernels/conv2d.h"
#include "common/kernels/elementwise.h"
#include "common/testing/random_tensor.h"

namespace course {
namespace {

// Arguments: input and output channels, the output plane's side, the batch, the route (0:
// oneDNN, 1: sgemm).
void BM_ConvWeightGradient(benchmark::State& state) {
  const int64_t in = state.range(0), out = state.range(1), side = state.range(2);
  const int64_t batch = state.range(3);
  const Conv2dShape conv{.stride = 1, .padding = 1};
  const Tensor x =
      testing::random_tensor({batch, in, side, side}, DType::kF32, Device::cpu(), 1).tensor;
  const Tensor dy =
      testing::random_tensor({batch, out, side, side}, DType::kF32, Device::cpu(), 2).tensor;
  Tensor dw = zeros({out, in, 3, 3}, DType::kF32, Device::cpu());
  for (auto _ : state) {
    if (state.range(4) == 1) {
      detail::gemm_conv2d_backward_weights_add(dy, x, dw, conv);
    } else {
      Tensor fresh = Tensor::empty(dw.shape(), DType::kF32, Device::cpu());
      detail::onednn_conv2d_backward_weights(dy, x, fresh, conv);
      axpy_(1.0f, fresh, dw);
    }
    benchmark::DoNotOptimize(dw.data());
  }
  state.SetLabel(state.range(4) == 1 ? "sgemm" : "oneDNN direct");
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * batch * side * side * in * out * 9,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

BENCHMARK(BM_ConvWeightGradient)
    ->ArgsProduct({{64}, {64}, {16}, {32}, {0, 1}})
    ->ArgsProduct({{128}, {128}, {8}, {32}, {0, 1}})
    ->ArgsProduct({{256}, {256}, {4}, {32}, {0, 1}})
    ->ArgsProduct({{512}, {512}, {2}, {32}, {0, 1}})
    ->ArgsProduct({{1}, {32}, {28}, {128}, {0, 1}})
    ->ArgsProduct({{32}, {64}, {14}, {128}, {0, 1}})
    ->ArgsProduct({{64}, {128}, {7}, {128}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace course
