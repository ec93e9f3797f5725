// Forward + backward time of each layer of the small Fashion-MNIST network at batch 128, on
// the CPU: where a training step's time goes (compare with //bench:gemm_bench's ceiling).
#include <benchmark/benchmark.h>

#include <random>

#include "common/kernels/layout.h"
#include "common/nn/activation.h"
#include "common/nn/batch_norm.h"
#include "common/nn/conv2d.h"
#include "common/nn/pooling.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

constexpr int64_t kBatch = 128;

void run(benchmark::State& state, Module& layer, const Shape& shape) {
  const MemoryFormat format =
      state.range(0) ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous;
  const Tensor x =
      to_memory_format(testing::random_tensor(shape, DType::kF32, Device::cpu(), 1).tensor, format);
  Tensor y = layer.forward(x);
  const Tensor dy = y;
  for (auto _ : state) {
    y = layer.forward(x);
    benchmark::DoNotOptimize(layer.backward(dy).data());
  }
  state.SetLabel(format == MemoryFormat::kChannelsLast ? "nhwc" : "nchw");
}

void BM_Conv3x3_32to64_14px(benchmark::State& state) {
  std::mt19937 rng(0);
  Conv2d conv(32, 64, 3, {1, 1}, rng, Device::cpu());
  run(state, conv, {kBatch, 32, 14, 14});
  state.counters["GFLOP/s"] = benchmark::Counter(3.0 * 2 * kBatch * 64 * 14 * 14 * 32 * 9,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

void BM_BatchNorm_64ch_14px(benchmark::State& state) {
  BatchNorm2d bn(64, Device::cpu());
  run(state, bn, {kBatch, 64, 14, 14});
}

// The batch norm above with its ReLU fused into its passes: against BatchNorm + Relu's sum.
void BM_BatchNormRelu_64ch_14px(benchmark::State& state) {
  BatchNorm2d bn(64, Device::cpu(), BatchNormActivation::kRelu);
  run(state, bn, {kBatch, 64, 14, 14});
}

void BM_MaxPool2_64ch_14px(benchmark::State& state) {
  MaxPool2d pool(2, 2);
  run(state, pool, {kBatch, 64, 14, 14});
}

void BM_Relu_64ch_14px(benchmark::State& state) {
  ReLU relu;
  run(state, relu, {kBatch, 64, 14, 14});
}

BENCHMARK(BM_Conv3x3_32to64_14px)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BatchNorm_64ch_14px)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BatchNormRelu_64ch_14px)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MaxPool2_64ch_14px)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Relu_64ch_14px)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace course::nn
