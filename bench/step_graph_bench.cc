// One SGD training step of the small Fashion-MNIST network, eager against replayed as a
// captured graph (the lab's --cuda-graphs), on the GPU when one is visible, else on the CPU.
// A graph saves the host's work per step (launches, allocator calls, checks), which matters
// most at small batches, where the kernels themselves are short.
#include <benchmark/benchmark.h>

#include <memory>

#include "common/kernels/cross_entropy.h"
#include "common/models/models.h"
#include "common/optim/optimizer.h"
#include "common/testing/random_tensor.h"
#include "common/train/step_graph.h"

namespace course {
namespace {

struct StepSetup {
  explicit StepSetup(int64_t batch)
      : device(default_device()),
        model(nn::make_model({.name = "smallnet", .in_channels = 1, .num_classes = 10, .seed = 1},
                             device)),
        optimizer(model->state().parameters, {.lr = 0.01f}),
        images(testing::random_tensor({batch, 1, 28, 28}, DType::kF32, device, 2).tensor) {
    std::vector<int64_t> values(batch);
    for (int64_t i = 0; i < batch; ++i) values[i] = i % 10;
    labels = Tensor::from_vector(values, {batch}, device);
  }

  // Forward, loss, backward and update; the loss stays on the device.
  Tensor step(const Tensor& x, const Tensor& y) {
    const Tensor logits = model->forward(x);
    const CrossEntropyOutput loss = softmax_cross_entropy(logits, y);
    model->zero_grad();
    model->backward(softmax_cross_entropy_backward(loss, y, 0.0f, logits.dtype()));
    optimizer.update();
    return loss.loss;
  }

  // One step as the lab runs it, eagerly or through `graph`; reading the loss waits for it.
  void run(train::StepGraph* graph) {
    optimizer.prepare_step();
    const Tensor loss = graph ? graph->run(images, labels) : step(images, labels);
    optimizer.count_step();
    benchmark::DoNotOptimize(loss.to_vector<float>());
  }

  Device device;
  std::unique_ptr<nn::Module> model;
  optim::Sgd optimizer;
  Tensor images, labels;
};

void BM_EagerStep(benchmark::State& state) {
  StepSetup s(state.range(0));
  s.run(nullptr);
  for (auto _ : state) s.run(nullptr);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel(s.device.str());
}

void BM_GraphStep(benchmark::State& state) {
  StepSetup s(state.range(0));
  train::StepGraph graph(s.device, [&s](const Tensor& x, const Tensor& y) { return s.step(x, y); });
  s.run(nullptr);  // the eager first step, as in the lab
  for (auto _ : state) s.run(&graph);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel(s.device.str());
}

BENCHMARK(BM_EagerStep)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphStep)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace course
