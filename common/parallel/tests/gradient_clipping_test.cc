// Gradient clipping by global norm in every parallel scheme, on 2 and 4 ranks, against one
// process clipping the whole model's gradient on the whole batch (torch.nn.utils.clip_grad_norm_'s
// rule: every gradient scaled by max_norm / (norm + 1e-6) when the norm is above max_norm). A GPT
// (its output layer tied to its embedding: one parameter at both ends of a pipeline) under DDP,
// every sharding strategy and every dp x tp x pp grid of the world; a ViT (stem and head whole on
// every tensor-parallel rank) cut over all the ranks. Each of 3 SGD steps, clipped every time,
// must see the single process's norm and, after the clipped updates, its losses: a replica or a
// shared table counted twice, a shard or a slice left out, fails it.
#include "common/parallel/gradient_clipping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/reduce.h"
#include "common/models/gpt/gpt.h"
#include "common/models/models.h"
#include "common/optim/optimizer.h"
#include "common/parallel/data_parallel/gradient_average.h"
#include "common/parallel/data_parallel_training.h"
#include "common/parallel/model_parallel_training.h"
#include "common/parallel/tests/random_windows.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 3;
constexpr int64_t kPerReplica = 2;  // sequences or images a replica's step
constexpr float kMaxNorm = 0.05f;   // below every step's norm: each step is clipped
// 4 blocks (up to 4 stages), 4 heads and a vocabulary of 48 (up to 4 tensor-parallel ranks).
const nn::GptConfig kGpt{"gpt-clip", 4, 4, 16, 8, 48};
const optim::SgdOptions kSgd{.lr = 2.0f};
const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);

using BatchOf = std::function<NextTokenBatch(int step, int64_t first, int64_t count)>;

// Sequences [first, first + count) of step `step`'s windows and their next tokens.
NextTokenBatch text_batch(int step, int64_t first, int64_t count) {
  return random_windows(70 + step, kGpt.context, kGpt.vocabulary, first, count);
}

// Images [first, first + count) of step `step`: signed pixels and their labels.
NextTokenBatch image_batch(int step, int64_t first, int64_t count) {
  const Tensor all = testing::random_tensor({16, 1, 28, 28}, DType::kF32, Device::cpu(),
                                            static_cast<uint32_t>(80 + step))
                         .tensor;
  std::mt19937 rng(90 + step);
  std::uniform_int_distribution<int64_t> label(0, 9);
  std::vector<int64_t> labels(16);
  for (auto& l : labels) l = label(rng);
  return {all.slice(first, first + count).clone(),
          Tensor::from_vector<int64_t>({labels.begin() + first, labels.begin() + first + count},
                                       {count})};
}

struct Record {
  std::vector<float> norms, losses;  // per step: the norm before clipping, the batch's loss
};

// One process: every replica's samples at once, the whole gradient's norm, clipped, a step.
Record train_alone(nn::Module& model, const BatchOf& batch_of, int replicas) {
  optim::Sgd sgd(model.state().parameters, kSgd);
  Record r;
  for (int step = 0; step < kSteps; ++step) {
    const NextTokenBatch b = batch_of(step, 0, replicas * kPerReplica);
    model.zero_grad();
    const Tensor logits = model.forward(b.inputs);
    const Tensor rows = logits.view({b.targets.numel(), logits.size(-1)});
    const CrossEntropyOutput out = softmax_cross_entropy(rows, b.targets);
    model.backward(
        softmax_cross_entropy_backward(out, b.targets, 0.0f, DType::kF32).view(logits.shape()));
    float squares = 0;
    for (nn::Parameter* p : model.parameters()) squares += sum(mul(p->grad, p->grad));
    const float norm = std::sqrt(squares);
    for (nn::Parameter* p : model.parameters()) scale_(p->grad, kMaxNorm / (norm + 1e-6f));
    sgd.step();
    r.norms.push_back(norm);
    r.losses.push_back(out.host_loss());
  }
  return r;
}

Record train_parallel(TrainingParallelism& parallelism, const BatchOf& batch_of) {
  const auto world = Communicator::world();
  optim::Sgd sgd(parallelism.optimized(), kSgd);
  Record r;
  for (int step = 0; step < kSteps; ++step) {
    const NextTokenBatch b = batch_of(step, parallelism.data_rank() * kPerReplica, kPerReplica);
    const float loss = parallelism.forward_backward(b, [](Phase) {}).to_vector<float>()[0];
    optim::GradientClipping clipping(kMaxNorm);
    apply_clipping(clipping, parallelism);
    EXPECT_EQ(clipping.clipped_steps(), 1);
    sgd.step();
    parallelism.after_step();
    r.norms.push_back(*clipping.last_norm());
    // Every rank of a replica holds its loss: the world's mean is the replicas'.
    r.losses.push_back(sum_over_ranks(loss / static_cast<float>(world->size()), *world));
  }
  return r;
}

void expect_same(const Record& parallel, const Record& alone, const std::string& what) {
  ASSERT_GT(alone.norms.back(), kMaxNorm) << "the test clips every step";
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_TRUE(testing::all_close({parallel.norms[step]}, {alone.norms[step]}, kParity))
        << what << ": norm of step " << step << " on rank " << Communicator::world()->rank() << ": "
        << parallel.norms[step] << " against " << alone.norms[step];
    EXPECT_TRUE(testing::all_close({parallel.losses[step]}, {alone.losses[step]}, kParity))
        << what << ": loss of step " << step << " on rank " << Communicator::world()->rank();
  }
}

std::unique_ptr<nn::Gpt> gpt() {
  std::mt19937 rng(21);
  return std::make_unique<nn::Gpt>(kGpt, rng, Device::cpu());
}

TEST(GradientClipping, EveryDataParallelModeClipsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const auto world = Communicator::world();
  const Record alone = train_alone(*gpt(), text_batch, world->size());
  std::vector<std::optional<Sharding>> modes = {std::nullopt};
  for (const std::string& name : sharding_names()) modes.push_back(parse_sharding(name));
  for (const std::optional<Sharding>& mode : modes) {
    const auto model = gpt();
    DataParallelTraining training(std::make_unique<DataParallelModel>(
                                      *model, model->blocks(), world,
                                      DataParallelOptions{.sharding = mode, .shard_group_size = 2}),
                                  world, 1, std::nullopt);
    expect_same(train_parallel(training, text_batch), alone, data_parallel_mode_name(mode));
  }
}

TEST(GradientClipping, EveryModelParallelGridClipsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int tp = 1; tp <= n; tp *= 2) {
    for (int pp = 1; tp * pp <= n; pp *= 2) {
      if (tp * pp == 1) continue;
      const GridShape shape{.dp = n / (tp * pp), .tp = tp, .pp = pp};
      const Record alone = train_alone(*gpt(), text_batch, shape.dp);
      const auto model = gpt();
      ModelParallelTraining training(
          *model, Communicator::world(),
          {.tensor_parallel = tp, .pipeline_stages = pp, .pipeline = {.micro_batches = 2}});
      expect_same(train_parallel(training, text_batch), alone, "gpt on " + shape.str());
    }
  }
}

TEST(GradientClipping, AVitCutOverEveryRankClipsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const auto vit = [] {
    return nn::make_model({.name = "vit-micro", .seed = 9, .image_size = 28}, Device::cpu());
  };
  const Record alone = train_alone(*vit(), image_batch, 1);
  const auto model = vit();
  ModelParallelTraining training(
      *model, image_batch(0, 0, 1).inputs, Communicator::world(),
      {.tensor_parallel = Communicator::world()->size(), .pipeline = {.micro_batches = 1}});
  expect_same(train_parallel(training, image_batch), alone,
              "vit-micro, every rank tensor-parallel");
}

}  // namespace
}  // namespace course::parallel
