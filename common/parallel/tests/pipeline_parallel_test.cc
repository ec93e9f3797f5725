// Pipeline parallelism against one process, on 2 and 4 ranks: a GPT of 5 blocks (cut unevenly)
// trains 3 AdamW steps of 4 micro-batches with every schedule, and with the cut by parameters
// (ZB-H1 also bit for bit against 1F1B, whose sums it reorders in time, not in order);
// every rank also trains the whole model alone, accumulating the same micro-batches in the same
// order (interleaved 1F1B: an 8-block GPT, 2 chunks per rank; and a wide one whose activations
// pass MPI's eager limit, with SGD). After each step the losses agree and
// each stage's parameters equal the single process's of the same name, the last stage's copy of the
// tied token embedding included; at the end every rank's gathered model is the single process's.
#include "common/parallel/pipeline/pipeline_parallel.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/optim/optimizer.h"
#include "common/parallel/tests/training_trace.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 3, kMicroBatches = 4;
constexpr int64_t kBatch = 8;  // sequences per step: micro-batches of 2
// The repository's f32 rule. Every stage adds its gradients in the single process's order, but
// the tied embedding's two sums (the first stage's, the last's) meet in another order, and
// AdamW turns the ~1e-7 differences of near-zero gradients (the attention's key bias) into
// ~1e-6 differences of the values from the second step on.
const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);
const nn::GptConfig kGpt{"gpt-pipe", 5, 2, 16, 12, 37};
const nn::GptConfig kDeepGpt{"gpt-pipe-deep", 8, 2, 16, 12, 37};  // 2 chunks on each of 4 ranks
// Activations of 2 x 12 x 96 f32 (9 KiB) per micro-batch: past MPI's eager limit (4 KiB over
// shared memory), a send completes only once its receive is posted, as NCCL's always do.
const nn::GptConfig kWideGpt{"gpt-pipe-wide", 8, 2, 96, 12, 37};
// A Llama of the same vocabulary and context, its output layer its own (not tied): the last
// stage's own weight, no table shared with the first.
const nn::GptConfig kLlama{"llama-pipe", 5,     4,     16, 12, 37, nn::DecoderFamily::kLlama, 2,
                           24,           false, 100.0f};
const optim::AdamWOptions kAdamW{.lr = 1e-2f, .weight_decay = 0.1f};

struct Batch {
  Tensor tokens, targets;  // (B, T) i32, (B * T,) i64
};

Batch batch_of_step(int step) {
  std::mt19937 rng(100 + step);
  std::uniform_int_distribution<int32_t> token(0, kGpt.vocabulary - 1);
  std::vector<int32_t> tokens(kBatch * kGpt.context);
  std::vector<int64_t> targets(tokens.size());
  for (auto& t : tokens) t = token(rng);
  for (auto& t : targets) t = token(rng);
  return {Tensor::from_vector<int32_t>(tokens, {kBatch, kGpt.context}),
          Tensor::from_vector<int64_t>(targets, {static_cast<int64_t>(targets.size())})};
}

// AdamW, except for the wide model: there the attention's key bias, whose true gradient is
// zero, gets gradients of rounding noise that AdamW would scale up to full steps; SGD keeps
// them at their size, so the comparison sees the pipeline, not the noise.
std::unique_ptr<optim::Optimizer> make_optimizer(
    const std::vector<std::pair<std::string, nn::Parameter*>>& params,
    const nn::GptConfig& config) {
  if (config.name == kWideGpt.name) {
    return std::make_unique<optim::Sgd>(params, optim::SgdOptions{.lr = 0.1f, .momentum = 0.9f});
  }
  return std::make_unique<optim::AdamW>(params, kAdamW);
}

std::unique_ptr<nn::Gpt> make_gpt(const nn::GptConfig& config = kGpt) {
  std::mt19937 rng(11);
  return std::make_unique<nn::Gpt>(config, rng, Device::cpu());
}

// The whole model on this rank: each micro-batch's loss scaled by 1/m, gradients accumulated.
Trace train_alone(const nn::GptConfig& config = kGpt) {
  auto gpt = make_gpt(config);
  const auto optimizer = make_optimizer(gpt->state().parameters, config);
  Trace trace;
  const int64_t rows = kBatch / kMicroBatches;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of_step(step);
    gpt->zero_grad();
    float loss = 0;
    for (int m = 0; m < kMicroBatches; ++m) {
      const Tensor tokens = b.tokens.slice(m * rows, (m + 1) * rows);
      const Tensor targets =
          b.targets.slice(m * rows * kGpt.context, (m + 1) * rows * kGpt.context);
      const Tensor logits = gpt->forward(tokens);
      const Tensor flat = logits.view({targets.numel(), kGpt.vocabulary});
      const CrossEntropyOutput out = softmax_cross_entropy(flat, targets);
      loss += out.host_loss() / kMicroBatches;
      gpt->backward(
          softmax_cross_entropy_backward(out, targets, 0.0f, DType::kF32, 1.0f / kMicroBatches)
              .view(logits.shape()));
    }
    optimizer->step();
    trace.losses.push_back(loss);
    trace.parameters.push_back(values_of(gpt->state().parameters));
  }
  trace.gathered = trace.parameters.back();
  return trace;
}

Trace train_pipelined(const PipelineOptions& options, const nn::GptConfig& config = kGpt) {
  auto gpt = make_gpt(config);
  PipelineParallel pipeline(*gpt, Communicator::world(), options);
  const auto optimizer = make_optimizer(pipeline.parameters(), config);
  Trace trace;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of_step(step);
    pipeline.zero_grad();
    trace.losses.push_back(pipeline.forward_backward(b.tokens, b.targets).to_vector<float>()[0]);
    optimizer->step();
    trace.parameters.push_back(values_of(pipeline.parameters()));
  }
  pipeline.gather_model();
  trace.gathered = values_of(gpt->state().parameters);
  return trace;
}

void expect_same_training(const Trace& pipelined, const Trace& alone, const std::string& what) {
  parallel::expect_same_training(pipelined, alone, what, kParity);
}

TEST(PipelineParity, EveryScheduleTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);  // a mismatched send or receive fails, not hangs
  const Trace alone = train_alone();
  for (auto schedule :
       {PipelineSchedule::kNaive, PipelineSchedule::kGpipe,
        PipelineSchedule::kOneForwardOneBackward, PipelineSchedule::kZeroBubbleH1}) {
    expect_same_training(train_pipelined({.schedule = schedule, .micro_batches = kMicroBatches}),
                         alone, pipeline_schedule_name(schedule));
  }
  expect_same_training(train_pipelined({.schedule = PipelineSchedule::kOneForwardOneBackward,
                                        .micro_batches = kMicroBatches,
                                        .balance = StageBalance::kParameters}),
                       alone, "1f1b cut by parameters");
}

TEST(PipelineParity, LlamaWithItsOwnOutputLayerTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const Trace alone = train_alone(kLlama);
  for (const StageBalance balance : {StageBalance::kLayers, StageBalance::kParameters}) {
    expect_same_training(train_pipelined({.schedule = PipelineSchedule::kOneForwardOneBackward,
                                          .micro_batches = kMicroBatches,
                                          .balance = balance},
                                         kLlama),
                         alone, "llama, 1f1b cut by " + stage_balance_name(balance));
  }
}

// ZB-H1 runs 1F1B's arithmetic with each backward's parameter gradients in a later weight pass:
// the same sums in the same order, so the same bits, for the GPT (its tied table's gradient
// split between the embedding's and the head's weight passes) and the Llama.
TEST(PipelineParity, ZeroBubbleH1ComputesOneForwardOneBackwardsGradients) {
  Communicator::world()->set_timeout(30);
  for (const nn::GptConfig& config : {kGpt, kLlama}) {
    const Trace one_f_one_b = train_pipelined(
        {.schedule = PipelineSchedule::kOneForwardOneBackward, .micro_batches = kMicroBatches},
        config);
    const Trace zero_bubble = train_pipelined(
        {.schedule = PipelineSchedule::kZeroBubbleH1, .micro_batches = kMicroBatches}, config);
    EXPECT_EQ(zero_bubble.losses, one_f_one_b.losses) << config.name;
    EXPECT_EQ(zero_bubble.parameters, one_f_one_b.parameters) << config.name;
    EXPECT_EQ(zero_bubble.gathered, one_f_one_b.gathered) << config.name;
  }
}

// Interleaved 1F1B: two chunks per rank of an 8-block GPT, cut by layers and by parameters.
TEST(PipelineParity, InterleavedScheduleTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const Trace alone = train_alone(kDeepGpt);
  for (const StageBalance balance : {StageBalance::kLayers, StageBalance::kParameters}) {
    expect_same_training(train_pipelined({.schedule = PipelineSchedule::kInterleaved,
                                          .micro_batches = kMicroBatches,
                                          .balance = balance,
                                          .virtual_stages = 2},
                                         kDeepGpt),
                         alone,
                         "interleaved, 2 chunks per rank, cut by " + stage_balance_name(balance));
  }
}

// Past the eager limit, a send posted in a group of its own before the receive its neighbour
// waits for deadlocks (it ends in the timeout); grouped with the next receive, it cannot.
TEST(PipelineParity, ActivationsPastTheEagerLimitFlowWithoutDeadlock) {
  Communicator::world()->set_timeout(30);
  const Trace alone = train_alone(kWideGpt);
  expect_same_training(train_pipelined({.schedule = PipelineSchedule::kOneForwardOneBackward,
                                        .micro_batches = kMicroBatches},
                                       kWideGpt),
                       alone, "1f1b, 9 KiB activations");
  expect_same_training(train_pipelined({.schedule = PipelineSchedule::kInterleaved,
                                        .micro_batches = kMicroBatches,
                                        .virtual_stages = 2},
                                       kWideGpt),
                       alone, "interleaved, 9 KiB activations");
}

// Each stage holds the activations of at most as many micro-batches as its schedule lets it.
TEST(PipelineParity, TimelinesFollowTheSchedules) {
  auto gpt = make_gpt();
  const auto world = Communicator::world();
  const Batch b = batch_of_step(0);
  for (auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward,
                        PipelineSchedule::kZeroBubbleH1}) {
    PipelineParallel pipeline(*gpt, world, {.schedule = schedule, .micro_batches = kMicroBatches});
    pipeline.forward_backward(b.tokens, b.targets);
    std::vector<PipelineAction> done;
    for (const TimedAction& a : pipeline.timeline()) {
      EXPECT_LE(a.start_s, a.end_s);
      done.push_back(a.action);
    }
    EXPECT_EQ(done, schedule_actions(schedule, world->rank(), world->size(), kMicroBatches));
    // One exchange per round that sends or receives, in round order, done after it was posted.
    std::vector<std::vector<PipelineAction>> actions;
    for (int s = 0; s < world->size(); ++s) {
      actions.push_back(schedule_actions(schedule, s, world->size(), kMicroBatches));
    }
    const std::vector<PipelineRound> rounds = pipeline_rounds(actions, 1)[world->rank()];
    std::vector<int> exchanging;
    for (size_t r = 0; r < rounds.size(); ++r) {
      if (!rounds[r].sends.empty() || !rounds[r].receives.empty()) {
        exchanging.push_back(static_cast<int>(r));
      }
    }
    std::vector<int> recorded;
    for (const TimedExchange& e : pipeline.exchanges()) {
      EXPECT_LE(e.posted_s, e.done_s);
      EXPECT_LE(e.done_s, pipeline.step_seconds());
      recorded.push_back(e.round);
    }
    EXPECT_EQ(recorded, exchanging) << pipeline_schedule_name(schedule);
    EXPECT_GE(pipeline.measured_bubble(), 0.0);
    EXPECT_LT(pipeline.measured_bubble(), 1.0);
  }
}

TEST(PipelineParity, BadShapesAreClearErrors) {
  auto gpt = make_gpt();
  PipelineParallel pipeline(*gpt, Communicator::world(), {.micro_batches = 3});
  const Batch b = batch_of_step(0);
  EXPECT_THROW(pipeline.forward_backward(b.tokens, b.targets), Error);  // 8 rows into 3
  std::mt19937 rng(1);
  nn::Gpt shallow({"shallow", 1, 2, 16, 12, 37}, rng, Device::cpu());
  EXPECT_THROW(PipelineParallel(shallow, Communicator::world(), {}), Error);
  // 5 blocks do not make 2 chunks on each of 4 ranks; 3 micro-batches are not a multiple of 2.
  if (Communicator::world()->size() == 4) {
    EXPECT_THROW(
        PipelineParallel(*gpt, Communicator::world(),
                         {.schedule = PipelineSchedule::kInterleaved, .virtual_stages = 2}),
        Error);
  }
  EXPECT_THROW(
      PipelineParallel(
          *gpt, Communicator::world(),
          {.schedule = PipelineSchedule::kInterleaved, .micro_batches = 3, .virtual_stages = 2}),
      Error);
}

}  // namespace
}  // namespace course::parallel
