// The optimizer in backward on one process and on 2 and 4 DDP ranks: a GPT and a Llama trained
// with their updates inside the backward pass end every step with the parameters of the usual
// step, bit for bit (AdamW and LAMB, one and two micro-batches); no gradient is kept between
// steps; and the sharded modes refuse it.
#include "common/parallel/optimizer_in_backward.h"

#include <gtest/gtest.h>

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
  bool gradients_kept = false;                 // any gradient defined between steps
};

// `subject` trained 3 steps over `comm` (one process: a communicator of this rank alone).
Run train(parity::Subject (*subject)(), std::shared_ptr<Communicator> comm,
          optim::OptimizerKind optimizer_kind, int micro_batches, bool in_backward) {
  parity::Subject s = subject();
  DataParallelTraining training(
      std::make_unique<DataParallelModel>(*s.model, *s.blocks, comm, DataParallelOptions{}), comm,
      micro_batches, std::nullopt);
  const auto optimizer = optim::make_optimizer(
      {.kind = optimizer_kind, .lr = 3e-3f, .weight_decay = 0.1f}, training.optimized());
  std::unique_ptr<OptimizerInBackward> fused;
  if (in_backward) fused = std::make_unique<OptimizerInBackward>(*optimizer, training);
  Run run;
  for (int step = 0; step < 3; ++step) {
    // Two windows per micro-batch: the batch of `micro_batches` of them.
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
    if (fused) fused->begin_step();
    training.forward_backward({Tensor::from_vector(inputs, {windows, context}),
                               Tensor::from_vector(labels, {static_cast<int64_t>(labels.size())})},
                              [](Phase) {});
    if (fused) {
      fused->end_step();
    } else {
      optimizer->step();
    }
    training.after_step();
    run.parameters.push_back(testing::parameter_values(*s.model));
    for (const nn::Parameter* p : s.model->parameters()) {
      run.gradients_kept = run.gradients_kept || (in_backward && p->grad.defined());
    }
  }
  return run;
}

void expect_same_steps(parity::Subject (*subject)(), std::shared_ptr<Communicator> comm,
                       const std::string& what) {
  for (const optim::OptimizerKind kind :
       {optim::OptimizerKind::kAdamW, optim::OptimizerKind::kLamb}) {
    const char* optimizer = optim::optimizer_name(kind);
    for (int micro_batches : {1, 2}) {
      const Run usual = train(subject, comm, kind, micro_batches, false);
      const Run fused = train(subject, comm, kind, micro_batches, true);
      EXPECT_FALSE(fused.gradients_kept) << what << " " << optimizer;
      for (size_t step = 0; step < usual.parameters.size(); ++step) {
        ASSERT_EQ(fused.parameters[step], usual.parameters[step])
            << what << ", " << optimizer << ", " << micro_batches << " micro-batch(es), step "
            << step;
      }
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
