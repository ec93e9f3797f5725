// The optimizer in backward on one process and on 2 and 4 DDP ranks: a GPT and a Llama trained
// with their updates inside the backward pass end every step with the parameters of the usual
// step, bit for bit (AdamW and LAMB, one and two micro-batches), and so do f16's two passes
// through overflowed steps (a ResNet's batch-norm statistics too); no gradient is kept between
// steps; and the sharded modes refuse it.
#include "common/parallel/optimizer_in_backward.h"

#include <gtest/gtest.h>

#include "common/optim/loss_scaler.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/data_parallel_training.h"
#include "common/parallel/tests/parity_subjects.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/parameter_values.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

using testing::world;

struct Run {
  std::vector<std::vector<float>> parameters;  // after every step
  std::vector<float> buffers;                  // after the last step (batch norm's statistics)
  bool gradients_kept = false;                 // any gradient defined between steps
  int64_t skipped_steps = 0;                   // f16's
};

// A step's batch of `micro_batches` micro-batches of two windows each (the GPT and the Llama).
NextTokenBatch gpt_batches(int64_t step, int micro_batches) {
  std::vector<int32_t> inputs;
  std::vector<int64_t> labels;
  int64_t windows = 0, context = 0;
  for (int m = 0; m < micro_batches; ++m) {
    const parity::Batch b = parity::gpt_batch(10 * step + m);
    const std::vector<int32_t> i = b.input.to_vector<int32_t>();
    const std::vector<int64_t> l = b.labels.to_vector<int64_t>();
    inputs.insert(inputs.end(), i.begin(), i.end());
    labels.insert(labels.end(), l.begin(), l.end());
    windows += b.input.size(0);
    context = b.input.size(1);
  }
  return {Tensor::from_vector(inputs, {windows, context}),
          Tensor::from_vector(labels, {static_cast<int64_t>(labels.size())})};
}

NextTokenBatch resnet_batches(int64_t step, int) {
  const parity::Batch b = parity::resnet_batch(step);
  return {b.input, b.labels};
}

struct TrainingSetup {
  parity::Subject (*subject)();
  NextTokenBatch (*batches)(int64_t step, int micro_batches);
  optim::OptimizerKind optimizer;
  int micro_batches = 1;
  float initial_scale = 0;  // f16 with dynamic loss scaling from this scale (0: f32)
  int steps = 3;
};

// One usual step: the optimizer's step after the passes (f16: the gradients unscaled and
// checked first, the scale updated after).
void usual_step(const std::function<Tensor()>& passes, optim::Optimizer& optimizer,
                optim::LossScaler* scaler, const std::vector<nn::Parameter*>& params) {
  passes();
  if (!scaler) return optimizer.step();
  scaler->unscale_and_check(params);
  optimizer.step(scaler->found_inf());
  scaler->update();
}

// `setup`'s subject trained over `comm` (one process: a communicator of this rank alone).
Run train(const TrainingSetup& setup, std::shared_ptr<Communicator> comm, bool in_backward) {
  parity::Subject s = setup.subject();
  const bool f16 = setup.initial_scale > 0;
  DataParallelTraining training(
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, comm, DataParallelOptions{}), comm,
      setup.micro_batches, f16 ? std::optional(DType::kF16) : std::nullopt);
  const auto optimizer = optim::make_optimizer(
      {.kind = setup.optimizer, .lr = 3e-3f, .weight_decay = 0.1f}, training.optimized());
  std::unique_ptr<optim::LossScaler> scaler;
  if (f16)
    scaler = std::make_unique<optim::LossScaler>(optim::LossScalerOptions{setup.initial_scale});
  std::unique_ptr<OptimizerInBackward> fused;
  if (in_backward) fused = std::make_unique<OptimizerInBackward>(*optimizer, training);
  Run run;
  for (int step = 0; step < setup.steps; ++step) {
    const NextTokenBatch batch = setup.batches(step, setup.micro_batches);
    const auto passes = [&] { return training.forward_backward(batch, [](Phase) {}); };
    if (scaler) training.set_loss_scale(scaler->scale_tensor(Device::cpu()));
    if (!fused) {
      usual_step(passes, *optimizer, scaler.get(), s.model->parameters());
    } else if (scaler) {
      fused->loss_scaled_step(passes, *scaler, comm.get());
    } else {
      fused->begin_step();
      passes();
      fused->end_step();
    }
    training.after_step();
    run.parameters.push_back(testing::parameter_values(*s.model));
    for (const nn::Parameter* p : s.model->parameters()) {
      run.gradients_kept = run.gradients_kept || (in_backward && p->grad.defined());
    }
  }
  for (const auto& [name, buffer] : s.model->state().buffers) {
    const std::vector<float> values = buffer->to_vector<float>();
    run.buffers.insert(run.buffers.end(), values.begin(), values.end());
  }
  if (scaler) run.skipped_steps = scaler->skipped_steps();
  return run;
}

void expect_same_run(const TrainingSetup& setup, std::shared_ptr<Communicator> comm,
                     const std::string& what) {
  const Run usual = train(setup, comm, false);
  const Run fused = train(setup, comm, true);
  EXPECT_FALSE(fused.gradients_kept) << what;
  for (size_t step = 0; step < usual.parameters.size(); ++step) {
    ASSERT_EQ(fused.parameters[step], usual.parameters[step]) << what << ", step " << step;
  }
  EXPECT_EQ(fused.buffers, usual.buffers) << what;
  EXPECT_EQ(fused.skipped_steps, usual.skipped_steps) << what;
}

void expect_same_steps(parity::Subject (*subject)(), std::shared_ptr<Communicator> comm,
                       const std::string& what) {
  for (const optim::OptimizerKind kind :
       {optim::OptimizerKind::kAdamW, optim::OptimizerKind::kLamb}) {
    for (int micro_batches : {1, 2}) {
      expect_same_run({subject, gpt_batches, kind, micro_batches}, comm,
                      what + ", " + optim::optimizer_name(kind) + ", " +
                          std::to_string(micro_batches) + " micro-batch(es)");
    }
  }
}

TEST(OptimizerInBackward, OneProcessUpdatesEachParameterAsTheUsualStepDoes) {
  const auto alone = world()->split(world()->rank(), 0);
  expect_same_steps(parity::gpt_subject, alone, "GPT, one process");
  expect_same_steps(parity::llama_subject, alone, "Llama, one process");
}

TEST(OptimizerInBackward, DdpUpdatesEachBucketAsTheUsualStepDoes) {
  expect_same_steps(parity::gpt_subject, world(), "GPT under DDP");
  expect_same_steps(parity::llama_subject, world(), "Llama under DDP");
}

// f16 from a scale that overflows its first steps: the two passes skip the same steps and update
// as the usual step does, bit for bit, batch norm's statistics moved once per step (a ResNet),
// with AdamW (skipped on the device) and LAMB (its flag read on the host).
TEST(OptimizerInBackward, LossScaledStepsInTwoPassesAsTheUsualStep) {
  const auto alone = world()->split(world()->rank(), 0);
  for (const optim::OptimizerKind kind :
       {optim::OptimizerKind::kAdamW, optim::OptimizerKind::kLamb}) {
    const std::string optimizer = optim::optimizer_name(kind);
    const TrainingSetup resnet{parity::resnet_subject, resnet_batches, kind, 1, 0x1p14f, 6};
    expect_same_run(resnet, alone, "ResNet in f16, one process, " + optimizer);
    expect_same_run(resnet, world(), "ResNet in f16 under DDP, " + optimizer);
    const TrainingSetup gpt{parity::gpt_subject, gpt_batches, kind, 2, 0x1p24f, 6};
    expect_same_run(gpt, world(), "GPT in f16 under DDP, 2 micro-batches, " + optimizer);
    const int64_t skipped = train(resnet, alone, true).skipped_steps;
    EXPECT_GT(skipped, 0) << optimizer;
    EXPECT_LT(skipped, resnet.steps) << optimizer;
  }
}

TEST(OptimizerInBackward, ShardedModesRefuseIt) {
  parity::Subject s = parity::gpt_subject();
  DataParallelTraining training(
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, world(),
                                          DataParallelOptions{.sharding = Sharding::kZero3}),
      world(), 1, std::nullopt);
  const auto optimizer =
      optim::make_optimizer({.kind = optim::OptimizerKind::kAdamW}, training.optimized());
  const std::string error =
      testing::error_of([&] { OptimizerInBackward fused(*optimizer, training); });
  EXPECT_NE(error.find("needs DDP or one process"), std::string::npos) << error;
}

}  // namespace
}  // namespace course::parallel
