// Pipeline parallelism of the image models against one process, on 2 and 4 ranks. A ViT (no
// batch normalisation) trains 2 SGD steps of 4 micro-batches through each schedule and cut, and
// must match one process stepping on the whole batch. A CoAtNet, whose activations change shape
// between stages (maps, then tokens) and whose batch norms see each micro-batch alone, must
// match one process accumulating the same micro-batches in the same order, in both memory
// formats. After each step the losses agree and each stage's parameters equal the single
// process's of the same name; at the end every rank's gathered model (batch-norm statistics
// included) is the single process's.
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/models/models.h"
#include "common/nn/piece_stages.h"
#include "common/optim/optimizer.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/parallel/tests/training_trace.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 2, kMicroBatches = 4;
constexpr int64_t kBatch = 8, kSide = 28, kClasses = 10;
const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);
const optim::SgdOptions kSgd{.lr = 0.05f, .momentum = 0.9f};

struct Case {
  std::string model;
  MemoryFormat format = MemoryFormat::kContiguous;
};

struct Batch {
  Tensor images, labels;  // (B, 1, 28, 28) signed f32 in the case's format, (B,) i64
};

Batch batch_of_step(int step, MemoryFormat format) {
  std::mt19937 rng(200 + step);
  std::normal_distribution<float> pixel(0.0f, 1.5f);
  std::uniform_int_distribution<int64_t> label(0, kClasses - 1);
  std::vector<float> pixels(kBatch * kSide * kSide);
  std::vector<int64_t> labels(kBatch);
  for (auto& p : pixels) p = pixel(rng);
  for (auto& l : labels) l = label(rng);
  return {to_memory_format(Tensor::from_vector(pixels, {kBatch, 1, kSide, kSide}), format),
          Tensor::from_vector(labels, {kBatch})};
}

nn::ModulePtr make(const Case& c) {
  return nn::make_model({.name = c.model, .seed = 7, .image_size = kSide}, Device::cpu());
}

// The parameters, and the buffers (batch-norm statistics) with them.
Values with_buffers(const nn::ModuleState& state) {
  Values out = values_of(state.parameters);
  for (const auto& [name, b] : state.buffers) out[name] = b->to_vector<float>();
  return out;
}

// One process: the whole batch at once, or its micro-batches one after the other, each loss
// scaled by 1/m and the gradients accumulated.
Trace train_alone(const Case& c, int micro_batches) {
  const nn::ModulePtr model = make(c);
  optim::Sgd sgd(model->state().parameters, kSgd);
  const int64_t rows = kBatch / micro_batches;
  Trace trace;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of_step(step, c.format);
    model->zero_grad();
    float loss = 0;
    for (int m = 0; m < micro_batches; ++m) {
      const Tensor labels = b.labels.slice(m * rows, (m + 1) * rows);
      const Tensor logits = model->forward(b.images.slice(m * rows, (m + 1) * rows));
      const CrossEntropyOutput out = softmax_cross_entropy(logits, labels);
      loss += out.host_loss() / static_cast<float>(micro_batches);
      model->backward(softmax_cross_entropy_backward(out, labels, 0.0f, DType::kF32,
                                                     1.0f / static_cast<float>(micro_batches)));
    }
    sgd.step();
    trace.losses.push_back(loss);
    trace.parameters.push_back(values_of(model->state().parameters));
  }
  trace.gathered = with_buffers(model->state());
  return trace;
}

Trace train_pipelined(const Case& c, const PipelineOptions& options) {
  const nn::ModulePtr model = make(c);
  const Tensor sample = batch_of_step(0, c.format).images.slice(0, 1);
  PipelineParallel pipeline(std::make_unique<nn::PieceStages>(*model, sample),
                            Communicator::world(), options);
  optim::Sgd sgd(pipeline.parameters(), kSgd);
  Trace trace;
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch_of_step(step, c.format);
    pipeline.zero_grad();
    trace.losses.push_back(pipeline.forward_backward(b.images, b.labels).to_vector<float>()[0]);
    sgd.step();
    trace.parameters.push_back(values_of(pipeline.parameters()));
  }
  pipeline.gather_model();
  trace.gathered = with_buffers(model->state());
  return trace;
}

void expect_same_training(const Trace& pipelined, const Trace& alone, const std::string& what) {
  parallel::expect_same_training(pipelined, alone, what, kParity);
}

TEST(ImagePipeline, VitTrainsAsOneProcessOnTheWholeBatch) {
  Communicator::world()->set_timeout(30);  // a mismatched send or receive fails, not hangs
  const Case vit{"vit-micro"};
  const Trace alone = train_alone(vit, 1);
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward,
                              PipelineSchedule::kZeroBubbleH1}) {
    expect_same_training(
        train_pipelined(vit, {.schedule = schedule, .micro_batches = kMicroBatches}), alone,
        "vit-micro, " + pipeline_schedule_name(schedule));
  }
}

TEST(ImagePipeline, CoatnetTrainsAsOneProcessAccumulating) {
  Communicator::world()->set_timeout(30);
  for (const MemoryFormat format : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast}) {
    const Case coatnet{"coatnet-micro", format};
    const Trace alone = train_alone(coatnet, kMicroBatches);
    for (const StageBalance balance :
         {StageBalance::kLayers, StageBalance::kParameters, StageBalance::kCompute}) {
      expect_same_training(
          train_pipelined(coatnet, {.schedule = PipelineSchedule::kOneForwardOneBackward,
                                    .micro_batches = kMicroBatches,
                                    .balance = balance}),
          alone,
          "coatnet-micro, " + std::string(format == MemoryFormat::kChannelsLast ? "NHWC" : "NCHW") +
              ", cut by " + stage_balance_name(balance));
    }
    // Its convolutions and batch norms compute their weights' gradients in the backward; the
    // attention blocks' linear layers leave theirs to the weight passes.
    expect_same_training(train_pipelined(coatnet, {.schedule = PipelineSchedule::kZeroBubbleH1,
                                                   .micro_batches = kMicroBatches}),
                         alone, "coatnet-micro, zb-h1");
  }
}

TEST(ImagePipeline, BadBatchesAreClearErrors) {
  const Case vit{"vit-micro"};
  const nn::ModulePtr model = make(vit);
  PipelineParallel pipeline(std::make_unique<nn::PieceStages>(*model, zeros({1, 1, kSide, kSide})),
                            Communicator::world(), {.micro_batches = 3});
  const Batch b = batch_of_step(0, vit.format);
  EXPECT_THROW(pipeline.forward_backward(b.images, b.labels), Error);  // 8 images into 3
  EXPECT_THROW(pipeline.forward_backward(b.images.slice(0, 6), b.labels.slice(0, 5)), Error);
}

}  // namespace
}  // namespace course::parallel
