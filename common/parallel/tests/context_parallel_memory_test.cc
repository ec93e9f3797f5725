// Context parallelism's activation memory per rank at a long context, measured: a GPT step
// (forward and backward of a 512-token window) on one process and on each of cp ranks holding
// 512/cp of its positions, the allocator's peak above what the step started with (parameters and
// gradients already allocated). Each rank must hold at most 1/cp of one process's, and the
// memory estimate's
// activations for the context-parallel run must be within 15% of the rank's measured ones.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/context_split.h"
#include "common/parallel/comm/process_grid.h"
#include "common/parallel/planning/memory_estimate.h"
#include "common/parallel/tensor_parallel/tensor_parallel_gpt.h"
#include "common/tensor/allocator.h"

namespace course::parallel {
namespace {

const nn::GptConfig kLongContext{"gpt-long", 2, 4, 64, 512, 64};
constexpr int64_t kBatch = 2;

struct Window {
  Tensor tokens, targets;
};

Window window() {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int32_t> token(0, kLongContext.vocabulary - 1);
  std::vector<int32_t> tokens(kBatch * kLongContext.context);
  std::vector<int64_t> targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = token(rng);
    targets[i] = token(rng);
  }
  return {Tensor::from_vector<int32_t>(tokens, {kBatch, kLongContext.context}),
          Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())})};
}

// The allocator's peak during a forward and backward of `model` on `w`, above what was allocated
// before it; the first step allocates the gradients, the second is measured.
int64_t step_peak(nn::Module& model, const Window& w) {
  CachingAllocator& allocator = device_allocator(Device::cpu());
  int64_t peak = 0;
  for (int step = 0; step < 2; ++step) {
    const int64_t before = allocator.stats().allocated;
    allocator.reset_peak();
    {
      const Tensor logits = model.forward(w.tokens);
      const Tensor rows = logits.view({w.targets.numel(), kLongContext.vocabulary});
      const CrossEntropyOutput loss = softmax_cross_entropy(rows, w.targets);
      model.backward(
          softmax_cross_entropy_backward(loss, w.targets, 0.0f, rows.dtype()).view(logits.shape()));
    }
    peak = allocator.stats().peak_allocated - before;
  }
  return peak;
}

TEST(ContextParallelMemory, EachRankHoldsAtMostOneCpthOfOneProcesssActivations) {
  const auto world = Communicator::world();
  const int cp = world->size();
  const Window whole_window = window();
  std::mt19937 rng(4);
  nn::Gpt alone(kLongContext, rng, Device::cpu());
  const int64_t one_process = step_peak(alone, whole_window);

  const ProcessGrid grid(world, {.dp = 1, .tp = 1, .pp = 1, .cp = cp});
  TensorParallelGpt model(alone, grid.tp());
  model.use_context_parallel(grid.cp());
  const nn::ContextSplit split{grid.coordinates().cp, cp};
  const int64_t per_rank = step_peak(model, {split.rows_of(whole_window.tokens),
                                             split.flat_rows_of(whole_window.targets, kBatch)});
  Tensor largest = Tensor::from_vector<float>({static_cast<float>(per_rank)}, {1});
  world->allreduce(largest, ReduceOp::kMax)->wait();
  const double measured = largest.to_vector<float>()[0];

  const MemoryEstimate estimate =
      estimate_memory({.model = kLongContext, .batch = kBatch, .context_parallel = cp});
  const double estimated = static_cast<double>(estimate.activations + estimate.temporaries);
  if (world->rank() == 0) {
    std::printf(
        "context %lld, batch %lld: one process %.2f MiB, each of %d context ranks %.2f "
        "MiB (%.3f of it; 1/cp %.3f), estimated %.2f MiB\n",
        static_cast<long long>(kLongContext.context), static_cast<long long>(kBatch),
        one_process / 1048576.0, cp, measured / 1048576.0, measured / one_process, 1.0 / cp,
        estimated / 1048576.0);
  }
  EXPECT_LE(measured, static_cast<double>(one_process) / cp);
  EXPECT_NEAR(estimated / measured, 1.0, 0.15);
}

}  // namespace
}  // namespace course::parallel
