// DDP parity on 2 and 4 CPU ranks (run under mpirun by mpirun_test.sh), as PyTorch tests it:
// each rank also trains a single-process reference on the whole global batch, and after each of
// 5 SGD steps the DDP model (fed only this rank's slice) must have the reference's loss and
// parameters. With batch norm, only synchronised batch norm keeps that parity. Sums over ranks
// happen in another order than sums over the batch, so the comparison allows f32 rounding: |ddp -
// reference| <= 1e-5 + 1e-4 |reference|.
#include "common/parallel/data_parallel/ddp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/batch_norm.h"
#include "common/nn/conv2d.h"
#include "common/nn/linear.h"
#include "common/nn/pooling.h"
#include "common/nn/sequential.h"
#include "common/optim/optimizer.h"
#include "common/testing/parameter_values.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using ::testing::HasSubstr;

constexpr testing::Tolerance kParity{1e-5, 1e-4};
constexpr int64_t kPerRank = 4, kClasses = 5, kSide = 8;

using testing::world;

// A parameter the network holds but never uses (a classifier head switched off, say).
class UnusedParameter : public nn::Module {
 public:
  UnusedParameter() : weight(zeros({3})) {}
  void collect(const std::string& prefix, nn::ModuleState& state) override {
    state.parameters.emplace_back(prefix + "weight", &weight);
  }
  nn::Parameter weight;

 protected:
  Tensor run_forward(const Tensor& x, nn::Context&) override { return x; }
  Tensor run_backward(const Tensor& dy, nn::Context&) override { return dy; }
};

// Batch norm only when asked: its batch statistics differ between a slice and the global
// batch unless synchronised.
std::unique_ptr<nn::Sequential> make_net(uint32_t seed, bool with_unused = false,
                                         bool with_batch_norm = false) {
  std::mt19937 rng(seed);
  auto net = std::make_unique<nn::Sequential>();
  net->add(std::make_unique<nn::Conv2d>(1, 6, 3, Conv2dShape{1, 1}, rng, Device::cpu()));
  if (with_batch_norm) net->add(std::make_unique<nn::BatchNorm2d>(6, Device::cpu()));
  net->add(std::make_unique<nn::ReLU>());
  net->add(std::make_unique<nn::MaxPool2d>(2, 2));
  net->add(std::make_unique<nn::Conv2d>(6, 8, 3, Conv2dShape{1, 1}, rng, Device::cpu()));
  net->add(std::make_unique<nn::ReLU>());
  net->add(std::make_unique<nn::GlobalAvgPool2d>());
  if (with_unused) net->add(std::make_unique<UnusedParameter>(), "unused");
  net->add(std::make_unique<nn::Linear>(8, kClasses, rng, Device::cpu()));
  return net;
}

struct GlobalBatch {
  Tensor images, labels;
};

GlobalBatch global_batch(int64_t rows, uint32_t seed) {
  std::vector<int64_t> labels(rows);
  for (int64_t i = 0; i < rows; ++i) labels[i] = (i * 7 + seed) % kClasses;
  return {testing::random_tensor({rows, 1, kSide, kSide}, DType::kF32, Device::cpu(), seed).tensor,
          Tensor::from_vector(labels, {rows})};
}

// Forward and backward of the mean loss of rows [begin, end), scaled by grad_scale.
float forward_backward(nn::Module& net, const GlobalBatch& batch, int64_t begin, int64_t end,
                       float grad_scale) {
  const Tensor images = batch.images.slice(begin, end).clone();
  const Tensor labels = batch.labels.slice(begin, end).clone();
  const Tensor logits = net.forward(images);
  const CrossEntropyOutput loss = softmax_cross_entropy(logits, labels);
  net.backward(softmax_cross_entropy_backward(loss, labels, 0.0f, DType::kF32, grad_scale));
  return loss.host_loss();
}

struct ParityCase {
  BucketPlan plan;
  DdpOptions options;
  int accumulation = 1;  // micro-batches per step, all but the last under no_sync
  bool with_unused = false;
  bool with_batch_norm = false;
  bool sync_batch_norm = false;
};

// Trains the reference and the DDP model side by side; whether they agree after every step.
::testing::AssertionResult parity(const ParityCase& c) {
  const int p = world()->size(), r = world()->rank();
  auto reference = make_net(1, c.with_unused, c.with_batch_norm);
  // Every rank but 0 starts from other weights: DDP must broadcast rank 0's.
  auto local = make_net(r == 0 ? 1 : 100 + r, c.with_unused, c.with_batch_norm);
  nn::SyncBatchNormScope sync(sync_batch_norm(world()), c.sync_batch_norm);
  DistributedDataParallel ddp(*local, world(), c.plan, c.options);
  optim::Sgd reference_sgd(reference->state().parameters, {.lr = 0.05f, .momentum = 0.9f});
  optim::Sgd local_sgd(local->state().parameters, {.lr = 0.05f, .momentum = 0.9f});
  const int64_t rows = kPerRank * p;
  for (int step = 0; step < 5; ++step) {
    reference->zero_grad();
    local->zero_grad();
    float reference_loss = 0, local_loss = 0;
    for (int micro = 0; micro < c.accumulation; ++micro) {
      const GlobalBatch batch = global_batch(rows, 10 * step + micro);
      const float scale = 1.0f / c.accumulation;
      reference_loss += scale * forward_backward(*reference, batch, 0, rows, scale);
      ddp.set_sync(micro == c.accumulation - 1);
      local_loss +=
          scale * forward_backward(*local, batch, r * kPerRank, (r + 1) * kPerRank, scale);
      ddp.finish_backward();
    }
    reference_sgd.step();
    local_sgd.step();
    const float mean_loss = allreduce_sum({local_loss}, *world())[0] / p;
    auto same_loss = testing::all_close({mean_loss}, {reference_loss}, kParity);
    if (!same_loss) return same_loss << " (the loss of step " << step << ")";
    auto same = testing::all_close(testing::parameter_values(*local),
                                   testing::parameter_values(*reference), kParity);
    if (!same) return same << " (parameters after step " << step << ")";
  }
  if (ddp.stats().steps != 5) {
    return ::testing::AssertionFailure() << ddp.stats().steps << " synchronised steps, not 5";
  }
  return ::testing::AssertionSuccess();
}

// The model's parameters in reverse order, `per_bucket` to a bucket.
BucketPlan reverse_buckets(size_t params, size_t per_bucket) {
  BucketPlan plan;
  for (size_t i = params; i-- > 0;) {
    if (plan.empty() || plan.back().size() == per_bucket) plan.emplace_back();
    plan.back().push_back(i);
  }
  return plan;
}

constexpr size_t kParams = 4;  // conv, conv, linear weight and bias

TEST(DdpParity, OneBucketPerParameter) {
  EXPECT_TRUE(parity({.plan = reverse_buckets(kParams, 1)}));
}

TEST(DdpParity, OneBucketForAll) {
  EXPECT_TRUE(parity({.plan = reverse_buckets(kParams, kParams)}));
}

TEST(DdpParity, BucketsOfTwoWithoutOverlap) {
  EXPECT_TRUE(parity({.plan = reverse_buckets(kParams, 2), .options = {.overlap = false}}));
}

TEST(DdpParity, GradientAccumulationWithNoSync) {
  EXPECT_TRUE(parity({.plan = reverse_buckets(kParams, 2), .accumulation = 3}));
}

TEST(DdpParity, UnusedParametersReduceZeros) {
  EXPECT_TRUE(parity({.plan = reverse_buckets(kParams + 1, 2),
                      .options = {.find_unused_parameters = true},
                      .with_unused = true}));
}

// Batch norm adds two parameters (scale and shift).
TEST(DdpParity, SynchronisedBatchNormMatchesTheGlobalBatch) {
  EXPECT_TRUE(parity(
      {.plan = reverse_buckets(kParams + 2, 3), .with_batch_norm = true, .sync_batch_norm = true}));
}

TEST(DdpParity, LocalBatchNormDoesNot) {
  if (world()->size() == 1) GTEST_SKIP() << "one rank: the slice is the global batch";
  EXPECT_FALSE(parity({.plan = reverse_buckets(kParams + 2, 3), .with_batch_norm = true}));
}

TEST(Ddp, AnUnusedParameterIsNamedUnlessAllowed) {
  auto net = make_net(1, true);
  DistributedDataParallel ddp(*net, world(), reverse_buckets(kParams + 1, kParams + 1));
  forward_backward(*net, global_batch(kPerRank, 0), 0, kPerRank, 1.0f);
  EXPECT_THAT([&] { ddp.finish_backward(); },
              ::testing::ThrowsMessage<Error>(
                  AllOf(HasSubstr("unused.weight"), HasSubstr("--find-unused-parameters"))));
}

TEST(Ddp, ABadPlanIsRejected) {
  auto net = make_net(1);
  EXPECT_THAT(
      [&] {
        DistributedDataParallel(*net, world(), {{0, 1}, {1, 2, 3}});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("is in two buckets")));
  EXPECT_THAT(
      [&] {
        DistributedDataParallel(*net, world(), {{0, 1, 2}});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("is in no bucket")));
}

TEST(Ddp, ReplicaDivergenceIsTheWidestSpreadOfAWeight) {
  const int p = world()->size(), r = world()->rank();
  auto net = make_net(3);
  EXPECT_EQ(replica_divergence(*net, *world()), 0.0f) << "the same seed on every rank";
  nn::Parameter* last = net->parameters().back();
  std::vector<float> values = last->value.to_vector<float>();
  const float first = values[0];
  values[0] += 0.25f * static_cast<float>(r);  // rank r moves one weight by r / 4
  last->value = Tensor::from_vector(values, last->value.shape());
  EXPECT_FLOAT_EQ(replica_divergence(*net, *world()), 0.25f * static_cast<float>(p - 1));
  EXPECT_FLOAT_EQ(last->value.to_vector<float>()[0], first + 0.25f * static_cast<float>(r))
      << "measuring leaves the weights alone";
}

TEST(Ddp, MetricsAreSummedOverRanks) {
  const int p = world()->size();
  const std::vector<float> sums =
      allreduce_sum({1.0f, static_cast<float>(world()->rank())}, *world());
  EXPECT_EQ(sums, (std::vector<float>{static_cast<float>(p), p * (p - 1) / 2.0f}));
  const std::vector<float> largest = allreduce_max(
      {static_cast<float>(world()->rank()), -static_cast<float>(world()->rank())}, *world());
  EXPECT_EQ(largest, (std::vector<float>{static_cast<float>(p - 1), 0.0f}));
}

}  // namespace
}  // namespace course::parallel
