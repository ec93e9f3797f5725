// The memory estimate against the allocator's measured peak of real GPT-2 and Llama steps, on 1 and
// 2 ranks: one process or DDP, every sharding strategy, f32 and bf16 compute, with and without
// activation checkpointing, with f32 or bf16 parameters gathered for compute. The peak is measured
// over a step after the first (the optimizer's states exist) and includes everything the rank
// holds, so the estimate must account for the whole step. Tolerance: within 15% of the measured
// peak (f32 runs land within 5%, bf16 within 12%: the 16-bit casts of gradients in backward are
// not itemised; those of the weights that the products keep for backward are, and bf16 compute
// from f32 parameters runs unsharded, with zero2, which keeps them, and with zero3, which frees
// them). The ZeRO paper's formulas are checked by hand values.
#include "common/parallel/planning/memory_estimate.h"

#include <gtest/gtest.h>

#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/nn/autocast.h"
#include "common/optim/optimizer.h"
#include "common/parallel/data_parallel/data_parallel_model.h"

namespace course::parallel {
namespace {

constexpr double kTolerance = 0.15;
const nn::GptConfig kModel{"gpt-estimate", 4, 4, 128, 64, 256};
// llama-tiny with its own output layer: RMSNorm's one statistic, SwiGLU's gate | up, no biases.
const nn::GptConfig kLlama{"llama-estimate",          4, 4,   128,   64,       256,
                           nn::DecoderFamily::kLlama, 2, 352, false, 500000.0f};
constexpr int64_t kBatch = 8;
// DeepSpeed's stage-3 defaults: every block prefetched, every tensor of this model persistent.
const ZeroCommunication kStage3{.prefetch_bucket_elements = 50'000'000,
                                .persistence_threshold = 100'000};

struct Case {
  std::string mode;
  DType compute = DType::kF32;
  bool checkpoint = false;
  DType param_dtype = DType::kF32;  // the sharded modes' gathered values
  const nn::GptConfig* model = &kModel;
  ZeroCommunication communication = {};  // DeepSpeed's stage-3 fetching
};

std::string describe(const Case& c) {
  return c.model->name + " " + c.mode + (c.compute == DType::kF32 ? " f32" : " bf16") +
         (c.checkpoint ? " checkpointed" : "") +
         (c.param_dtype == DType::kF32 ? "" : " bf16 parameters") +
         communication_note(c.communication);
}

// The allocator's peak over the second of two steps.
int64_t measured_peak(const Case& c) {
  const auto comm = Communicator::world();
  std::mt19937 rng(3);
  const nn::GptConfig& config = *c.model;
  nn::Gpt model(config, rng, Device::cpu(), c.checkpoint);
  DataParallelModel data_parallel(model, model.blocks(), comm,
                                  {.sharding = parse_data_parallel_mode(c.mode),
                                   .param_dtype = c.param_dtype,
                                   .communication = c.communication});
  optim::AdamW adamw(data_parallel.optimized(), {.lr = 1e-3f});
  std::vector<int32_t> tokens(kBatch * config.context);
  std::vector<int64_t> targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7 + comm->rank()) % 256);
    targets[i] = static_cast<int64_t>((i * 13) % 256);
  }
  const Tensor inputs = Tensor::from_vector<int32_t>(tokens, {kBatch, config.context});
  const Tensor labels =
      Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())});
  CachingAllocator& allocator = device_allocator(Device::cpu());
  for (int step = 0; step < 2; ++step) {
    if (step == 1) allocator.reset_peak();
    nn::Module& net = data_parallel.net();
    net.zero_grad();
    // As the day-4 lab does, the logits and the loss stay alive through backward.
    nn::Autocast autocast(c.compute == DType::kF32 ? DType::kBF16 : c.compute,
                          c.compute != DType::kF32);
    const Tensor logits = net.forward(inputs);
    const Tensor rows = logits.view({labels.numel(), config.vocabulary});
    const CrossEntropyOutput loss = softmax_cross_entropy(rows, labels);
    const Tensor dlogits =
        softmax_cross_entropy_backward(loss, labels, 0.0f, rows.dtype()).view(logits.shape());
    net.backward(dlogits);
    data_parallel.finish_backward();
    adamw.step();
    data_parallel.after_step();
  }
  return allocator.stats().peak_allocated;
}

TEST(MemoryEstimate, IsWithinFifteenPercentOfTheMeasuredPeak) {
  const int ranks = Communicator::world()->size();
  const std::vector<Case> cases = {{"none"},
                                   {"none", DType::kBF16},
                                   {"none", DType::kF32, true},
                                   {"zero1"},
                                   {"zero2"},
                                   {"zero3"},
                                   {"shard-grad-op"},
                                   {"no-shard"},
                                   {"hybrid-shard"},
                                   {"zero2", DType::kBF16},
                                   {"zero3", DType::kBF16},
                                   {"zero3", DType::kBF16, true},
                                   {"zero1", DType::kBF16, false, DType::kBF16},
                                   {"zero3", DType::kBF16, false, DType::kBF16},
                                   {"none", DType::kF32, false, DType::kF32, &kLlama},
                                   {"none", DType::kBF16, true, DType::kF32, &kLlama},
                                   {"zero2", DType::kF32, false, DType::kF32, &kLlama},
                                   {"zero3", DType::kBF16, false, DType::kBF16, &kLlama},
                                   {"zero3", DType::kF32, false, DType::kF32, &kModel, kStage3},
                                   {"zero3",
                                    DType::kF32,
                                    false,
                                    DType::kF32,
                                    &kModel,
                                    {.prefetch_bucket_elements = 1, .persistence_threshold = 128}}};
  for (const Case& c : cases) {
    const int64_t measured = measured_peak(c);
    const MemoryEstimate estimate = estimate_memory(
        {.model = *c.model,
         .batch = kBatch,
         .compute = c.compute,
         .checkpoint_activations = c.checkpoint,
         .state = {.sharding = parse_data_parallel_mode(c.mode),
                   .ranks = ranks,
                   .param_dtype = c.param_dtype,
                   .stage3_prefetch = stage3_budget(c.communication),
                   .persistence_threshold = c.communication.persistence_threshold}});
    const double ratio = static_cast<double>(estimate.total()) / measured;
    std::printf("%-28s ranks %d: estimated %.2f MiB, measured %.2f MiB (%.3f)\n",
                describe(c).c_str(), ranks, estimate.total() / 1048576.0, measured / 1048576.0,
                ratio);
    EXPECT_NEAR(ratio, 1.0, kTolerance) << describe(c) << " on " << ranks << " ranks\n"
                                        << course::parallel::describe(estimate);
  }
}

// DeepSpeed's stage 3 at its limits holds what the other modes hold: every tensor persistent,
// or every block prefetched, is zero2's full values; a bucket of one element is FSDP's window
// of the block run and the one prefetched.
TEST(MemoryEstimate, Stage3FetchingAtItsLimitsHoldsWhatTheOtherModesHold) {
  const auto parameters = [](Sharding sharding, std::optional<PrefetchBudget> prefetch,
                             int64_t threshold) {
    return estimate_memory({.model = kModel,
                            .batch = kBatch,
                            .state = {.sharding = sharding,
                                      .ranks = 2,
                                      .stage3_prefetch = prefetch,
                                      .persistence_threshold = threshold}})
        .parameters;
  };
  const int64_t zero2 = parameters(Sharding::kZero2, std::nullopt, 0);
  const int64_t fsdp = parameters(Sharding::kZero3, std::nullopt, 0);
  const PrefetchBudget everything{.bucket_elements = 50'000'000, .max_live_elements = 1 << 30};
  EXPECT_EQ(parameters(Sharding::kZero3, std::nullopt, 100'000), zero2);
  EXPECT_EQ(parameters(Sharding::kZero3, everything, 0), zero2);
  EXPECT_EQ(parameters(Sharding::kZero3, PrefetchBudget{1, 1 << 30}, 0), fsdp);
  EXPECT_LT(parameters(Sharding::kZero3, PrefetchBudget{0, 1 << 30}, 0), fsdp);
  // The live cap below the root and one block: no block prefetched either.
  EXPECT_EQ(parameters(Sharding::kZero3, PrefetchBudget{50'000'000, 1}, 0),
            parameters(Sharding::kZero3, PrefetchBudget{0, 1 << 30}, 0));
  EXPECT_LT(fsdp, zero2);
}

TEST(MemoryEstimate, ZeroPaperFormulasGiveTheirPublishedFigures) {
  // 7.5B parameters on 64 GPUs: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB (the ZeRO paper's figure 1).
  const int64_t psi = 7'500'000'000;
  EXPECT_EQ(zero_paper_bytes(psi, 0, 64), 120'000'000'000);
  EXPECT_EQ(zero_paper_bytes(psi, 1, 64), 30'000'000'000 + 1'406'250'000);
  EXPECT_EQ(zero_paper_bytes(psi, 2, 64), 15'000'000'000 + 1'640'625'000);
  EXPECT_EQ(zero_paper_bytes(psi, 3, 64), 1'875'000'000);
}

}  // namespace
}  // namespace course::parallel
