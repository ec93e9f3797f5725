// A Vision Transformer with its blocks cut over tensor-parallel ranks, alone (data x tensor) and
// in pipeline stages as well (data x tensor x pipeline), through the lab's ModelParallelTraining,
// against one process training the whole model on the whole batch, on 2 and 4 ranks: every grid
// of the world with 2 or more tensor-parallel ranks. After every SGD step the replicas' mean loss
// is the single process's, and so is the whole model gathered on every rank (stem, head and every
// block's slices: a replicated part trained twice, or a slice put back in the wrong place, fails
// it). CoAtNet's blocks, sequence parallelism and heads that do not split are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/models/models.h"
#include "common/models/vit/vit.h"
#include "common/optim/optimizer.h"
#include "common/parallel/model_parallel_training.h"
#include "common/parallel/tests/training_trace.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 3, kMicroBatches = 2;
constexpr int64_t kImagesPerReplica = 4, kSide = 28, kClasses = 10;
const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);
const optim::SgdOptions kSgd{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f};

// Images [first, first + count) of step `step`'s batch: signed pixels and their labels.
NextTokenBatch batch(int step, int64_t first, int64_t count) {
  std::mt19937 rng(300 + step);
  std::normal_distribution<float> pixel(0.0f, 1.5f);
  std::uniform_int_distribution<int64_t> label(0, kClasses - 1);
  const int64_t all = 16, side = kSide * kSide;
  std::vector<float> pixels(all * side);
  std::vector<int64_t> labels(all);
  for (auto& p : pixels) p = pixel(rng);
  for (auto& l : labels) l = label(rng);
  return {Tensor::from_vector<float>(
              {pixels.begin() + first * side, pixels.begin() + (first + count) * side},
              {count, 1, kSide, kSide}),
          Tensor::from_vector<int64_t>({labels.begin() + first, labels.begin() + first + count},
                                       {count})};
}

nn::ModulePtr vit_micro() {
  return nn::make_model({.name = "vit-micro", .seed = 7, .image_size = kSide}, Device::cpu());
}

// One process: the whole model on every replica's images at once.
Trace train_alone(int replicas) {
  const nn::ModulePtr model = vit_micro();
  optim::Sgd sgd(model->state().parameters, kSgd);
  Trace trace;
  for (int step = 0; step < kSteps; ++step) {
    const NextTokenBatch b = batch(step, 0, replicas * kImagesPerReplica);
    model->zero_grad();
    const CrossEntropyOutput out = softmax_cross_entropy(model->forward(b.inputs), b.targets);
    model->backward(softmax_cross_entropy_backward(out, b.targets, 0.0f, DType::kF32, 1.0f));
    sgd.step();
    trace.losses.push_back(out.host_loss());
    trace.parameters.push_back(values_of(model->state().parameters));
  }
  return trace;
}

ModelParallelOptions options_for(const GridShape& shape) {
  return {.tensor_parallel = shape.tp,
          .pipeline_stages = shape.pp,
          .pipeline = {.micro_batches = shape.pp > 1 ? kMicroBatches : 1}};
}

// The whole model gathered after every step, and the replicas' mean loss, on `shape`'s grid.
Trace train_cut(const GridShape& shape) {
  const nn::ModulePtr model = vit_micro();
  const auto world = Communicator::world();
  ModelParallelTraining training(*model, batch(0, 0, 1).inputs, world, options_for(shape));
  optim::Sgd sgd(training.optimized(), kSgd);
  Trace trace;
  for (int step = 0; step < kSteps; ++step) {
    const float loss = training
                           .forward_backward(batch(step, training.data_rank() * kImagesPerReplica,
                                                   kImagesPerReplica),
                                             [](Phase) {})
                           .to_vector<float>()[0];
    sgd.step();
    training.after_step();
    // Every rank of a replica holds its loss: the world's mean is the replicas'.
    Tensor mean = Tensor::from_vector<float>({loss / static_cast<float>(world->size())}, {1});
    world->allreduce(mean)->wait();
    trace.losses.push_back(mean.to_vector<float>()[0]);
    trace.parameters.push_back(values_of(training.whole_model().state().parameters));
  }
  trace.gathered = trace.parameters.back();
  return trace;
}

TEST(TensorParallelVit, EveryGridWithTensorParallelRanksTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);  // a mismatched collective fails, not hangs
  const int n = Communicator::world()->size();
  for (int tp = 2; tp <= n; tp *= 2) {
    for (int pp = 1; tp * pp <= n; pp *= 2) {
      const GridShape shape{.dp = n / (tp * pp), .tp = tp, .pp = pp};
      Trace alone = train_alone(shape.dp);
      alone.gathered = alone.parameters.back();
      expect_same_training(train_cut(shape), alone, "vit-micro on " + shape.str(), kParity);
    }
  }
}

TEST(TensorParallelVit, WhatCannotBeCutIsRefusedWithOneMessage) {
  const auto world = Communicator::world();
  const Tensor sample = batch(0, 0, 1).inputs;
  const ModelParallelOptions tensor_parallel{.tensor_parallel = world->size()};
  const nn::ModulePtr coatnet =
      nn::make_model({.name = "coatnet-micro", .seed = 7, .image_size = kSide}, Device::cpu());
  EXPECT_THAT(
      testing::error_of([&] { ModelParallelTraining(*coatnet, sample, world, tensor_parallel); }),
      ::testing::HasSubstr("is not one: it takes pipeline stages and data parallelism"));
  const nn::ModulePtr vit = vit_micro();
  EXPECT_THAT(testing::error_of([&] {
                ModelParallelTraining(
                    *vit, sample, world,
                    {.tensor_parallel = world->size(), .sequence_parallel = true});
              }),
              ::testing::HasSubstr("an image model's tokens stay whole"));
  std::mt19937 rng(3);
  const nn::ModulePtr three_heads = nn::make_vit({.name = "vit-3-heads",
                                                  .image = kSide,
                                                  .patch = 7,
                                                  .layers = 1,
                                                  .heads = 3,
                                                  .channels = 12,
                                                  .in_channels = 1,
                                                  .classes = kClasses},
                                                 rng, Device::cpu());
  EXPECT_THAT(testing::error_of(
                  [&] { ModelParallelTraining(*three_heads, sample, world, tensor_parallel); }),
              ::testing::HasSubstr("heads do not split over"));
}

}  // namespace
}  // namespace course::parallel
