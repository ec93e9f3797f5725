// Several calls in flight through the same layers (per-call contexts), and activation
// checkpointing on top of them, on a small GPT: micro-batches backed up in any order give the
// gradients of running them one at a time; checkpointed blocks give the same gradients bit for
// bit with a lower peak of allocated memory. On CoAtNet, whose MBConv blocks normalise by the
// batch, the same gradients and running statistics moved once, not again by the recomputation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "common/kernels/elementwise.h"
#include "common/kernels/launch_plan.h"
#include "common/models/gpt/gpt.h"
#include "common/models/models.h"
#include "common/nn/model_pieces.h"
#include "common/tensor/allocator.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::nn {
namespace {

using testing::kCpu;
const GptConfig kConfig{"test", 3, 2, 16, 12, 13};
constexpr int kMicroBatches = 3;

struct MicroBatch {
  Tensor tokens, dlogits;  // the input and a fixed upstream gradient
};

std::vector<MicroBatch> micro_batches(int64_t batch, int64_t seq, const GptConfig& config) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(config.vocabulary - 1));
  std::vector<MicroBatch> out;
  for (int m = 0; m < kMicroBatches; ++m) {
    std::vector<int32_t> ids(batch * seq);
    for (int32_t& id : ids) id = any(rng);
    out.push_back(
        {Tensor::from_vector(ids, {batch, seq}),
         testing::random_tensor({batch, seq, config.vocabulary}, DType::kF32, kCpu, 100 + m)
             .tensor});
  }
  return out;
}

std::vector<std::vector<float>> gradients(Module& model) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : model.parameters()) out.push_back(p->grad.to_vector<float>());
  return out;
}

// Runs the forward (F) and backward (B) calls of `schedule`, e.g. "F0 F1 B0 F2 B1 B2".
std::vector<std::vector<float>> run_schedule(const std::string& schedule) {
  std::mt19937 rng(20);
  Gpt gpt(kConfig, rng, kCpu);
  const std::vector<MicroBatch> batches = micro_batches(2, kConfig.context, kConfig);
  std::vector<Context> contexts(kMicroBatches);
  for (size_t i = 0; i + 1 < schedule.size(); i += 3) {
    const int m = schedule[i + 1] - '0';
    if (schedule[i] == 'F') {
      gpt.forward(batches[m].tokens, contexts[m]);
    } else {
      gpt.backward(batches[m].dlogits, contexts[m]);
      EXPECT_TRUE(contexts[m].empty()) << "backward releases its context";
    }
  }
  return gradients(gpt);
}

void expect_close(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(testing::all_close(a[i], b[i], DType::kF32)) << "parameter " << i;
  }
}

TEST(MicroBatches, InFlightGiveTheGradientsOfOneAtATime) {
  const auto one_at_a_time = run_schedule("F0 B0 F1 B1 F2 B2");
  // Same order of accumulation: bit for bit.
  EXPECT_EQ(run_schedule("F0 F1 F2 B0 B1 B2"), one_at_a_time);
  // Other orders add the same terms in another order: equal within f32 rounding.
  expect_close(run_schedule("F0 F1 F2 B2 B1 B0"), one_at_a_time);  // GPipe's backward order
  expect_close(run_schedule("F0 F1 B0 F2 B1 B2"), one_at_a_time);  // 1F1B
}

// Gradients accumulate over micro-batches until zero_grad, which zeroes every one of a model in
// one launch on an accelerator, leaving a freed one freed.
TEST(MicroBatches, ZeroGradZeroesEveryGradientInOneLaunch) {
  for (Device device : {kCpu, Device::sim()}) {
    std::mt19937 rng(23);
    Gpt gpt(kConfig, rng, device);
    const MicroBatch mb = micro_batches(2, 12, kConfig).front();
    gpt.forward(mb.tokens.to(device));
    gpt.backward(mb.dlogits.to(device));
    std::vector<Parameter*> params = gpt.parameters();
    params.back()->grad_on_demand = true;
    params.back()->grad = Tensor();
    if (device.is_sim()) {
      LaunchLog log;
      gpt.zero_grad();
      ASSERT_EQ(log.launches().size(), 1u);
      EXPECT_NE(log.launches()[0].kernel.find("ZeroUpdate"), std::string::npos);
    }
    gpt.zero_grad();
    for (size_t i = 0; i + 1 < params.size(); ++i) {
      for (float g : testing::to_floats(params[i]->grad)) ASSERT_EQ(g, 0.0f) << "parameter " << i;
    }
    EXPECT_FALSE(params.back()->grad.defined());
  }
}

TEST(MicroBatches, ABackwardWithoutItsForwardIsAClearError) {
  std::mt19937 rng(22);
  Gpt gpt(kConfig, rng, kCpu);
  const std::vector<MicroBatch> batches = micro_batches(1, 4, kConfig);
  Context ctx;
  gpt.forward(batches[0].tokens, ctx);
  gpt.backward(batches[0].dlogits.slice(0, 1).view({1, 4, kConfig.vocabulary}), ctx);
  EXPECT_THAT(testing::error_of([&] { gpt.backward(batches[0].dlogits, ctx); }),
              ::testing::HasSubstr("backward without a forward on this context"));
}

struct StepRecord {
  std::vector<float> logits;
  std::vector<std::vector<float>> grads;
  int64_t peak_bytes;  // allocated during the step, above what was held before it
};

StepRecord recorded_step(bool checkpoint) {
  std::mt19937 rng(23);
  const GptConfig config{"deep", 6, 2, 32, 32, 13};
  Gpt gpt(config, rng, kCpu, checkpoint);
  const MicroBatch batch = micro_batches(4, config.context, config)[0];
  CachingAllocator& allocator = device_allocator(kCpu);
  const int64_t before = allocator.stats().allocated;
  allocator.reset_peak();
  StepRecord r;
  r.logits = gpt.forward(batch.tokens).to_vector<float>();
  gpt.backward(batch.dlogits);
  r.peak_bytes = allocator.stats().peak_allocated - before;
  r.grads = gradients(gpt);
  return r;
}

TEST(ActivationCheckpointing, SameGradientsBitForBitWithALowerPeak) {
  const StepRecord plain = recorded_step(false), checkpointed = recorded_step(true);
  EXPECT_EQ(checkpointed.logits, plain.logits);
  EXPECT_EQ(checkpointed.grads, plain.grads);
  EXPECT_LT(checkpointed.peak_bytes, plain.peak_bytes * 6 / 10)
      << "peak " << checkpointed.peak_bytes << " bytes checkpointed, " << plain.peak_bytes
      << " plain";
}

// One training-mode step of coatnet-micro on signed images: its logits, gradients and buffers.
struct BatchNormStep {
  std::vector<float> logits;
  std::vector<std::vector<float>> grads, buffers;
};

BatchNormStep coatnet_step(bool checkpoint) {
  ModulePtr model = make_model({.name = "coatnet-micro", .seed = 5, .image_size = 28}, kCpu);
  if (checkpoint) checkpoint_blocks(*model);
  const Tensor images = testing::random_tensor({4, 1, 28, 28}, DType::kF32, kCpu, 31).tensor;
  const Tensor logits = model->forward(images);
  model->backward(testing::random_tensor(logits.shape(), DType::kF32, kCpu, 32).tensor);
  BatchNormStep r{.logits = logits.to_vector<float>(), .grads = gradients(*model)};
  for (const auto& [name, buffer] : model->state().buffers) {
    r.buffers.push_back(buffer->to_vector<float>());
  }
  return r;
}

TEST(ActivationCheckpointing, BatchNormalisedBlocksMoveTheirStatisticsOnce) {
  const BatchNormStep plain = coatnet_step(false), checkpointed = coatnet_step(true);
  ASSERT_FALSE(plain.buffers.empty());
  EXPECT_EQ(checkpointed.logits, plain.logits);
  EXPECT_EQ(checkpointed.grads, plain.grads);
  EXPECT_EQ(checkpointed.buffers, plain.buffers);
}

}  // namespace
}  // namespace course::nn
