// The backward split into its input-gradient half (B) and its weight-gradient half (W)
// (common/nn/context.h), on a GPT (Linear, LayerNorm, the token and position tables, the tied
// head) and a Llama (RMSNorm, an untied output layer): with a queue attached, backward leaves
// every parameter's gradient untouched and returns the same input gradient; running the queue
// then gives the same gradients as one undivided backward, ready hooks included (a caller's
// `between` called after each of its items): bit for bit on
// the CPU; on a GPU within the f32 rule (its embedding backward adds with atomics, in no fixed
// order). The GPU cases run in the GPU self-test.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "common/kernels/elementwise.h"
#include "common/models/gpt/gpt.h"
#include "common/nn/checkpointed.h"
#include "common/nn/linear.h"
#include "common/testing/devices.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::nn {
namespace {

using Gradients = std::map<std::string, std::vector<float>>;

Gradients gradients_of(Module& model) {
  Gradients out;
  for (const auto& [name, p] : model.state().parameters) out[name] = p->grad.to_vector<float>();
  return out;
}

void expect_same_gradients(const Gradients& got, const Gradients& expected, Device device,
                           const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (const auto& [name, values] : got) {
    if (device.is_cpu()) {
      EXPECT_EQ(values, expected.at(name)) << what << ": " << name;
    } else {
      EXPECT_TRUE(testing::all_close(values, expected.at(name), DType::kF32))
          << what << ": " << name;
    }
  }
}

void expect_split_backward_is_the_whole(const GptConfig& config, Device device) {
  std::mt19937 rng(7);
  Gpt gpt(config, rng, device);
  const Tensor tokens = testing::random_tokens(3, config.context, config.vocabulary, 8).to(device);
  const Tensor dlogits =
      testing::random_tensor({3, config.context, config.vocabulary}, DType::kF32, device, 9).tensor;

  Context whole_ctx;
  gpt.zero_grad();
  gpt.forward(tokens, whole_ctx);
  gpt.backward(dlogits, whole_ctx);
  const Gradients whole = gradients_of(gpt);

  std::map<std::string, int> ready;
  const auto params = gpt.state().parameters;
  gpt.set_grad_ready_hook([&](Parameter& p) {
    for (const auto& [name, q] : params) {
      if (q == &p) ++ready[name];
    }
  });
  Context split_ctx;
  WeightGradientQueue weight_pass;
  gpt.zero_grad();
  gpt.forward(tokens, split_ctx);
  split_ctx.defer_weight_gradients(&weight_pass);
  gpt.backward(dlogits, split_ctx);
  split_ctx.defer_weight_gradients(nullptr);
  for (const auto& [name, values] : gradients_of(gpt)) {
    EXPECT_EQ(values, std::vector<float>(values.size(), 0.0f))
        << config.name << ": " << name << "'s gradient changed in the input-gradient half";
  }
  EXPECT_TRUE(ready.empty()) << config.name << ": a gradient was ready before the weight pass";
  ASSERT_FALSE(weight_pass.empty());
  // The caller's `between` runs after each queued item (a pipeline lets MPI move its messages
  // there): the calls see gradients get ready along the way (a tied table's only once both of
  // its halves are in), the last call all of them.
  std::vector<int> ready_at_each_call;
  const auto ready_count = [&] {
    int count = 0;
    for (const auto& [name, times] : ready) count += times;
    return count;
  };
  weight_pass.run([&] { ready_at_each_call.push_back(ready_count()); });
  EXPECT_TRUE(weight_pass.empty());
  ASSERT_GT(ready_at_each_call.size(), 2u) << config.name;
  EXPECT_TRUE(std::is_sorted(ready_at_each_call.begin(), ready_at_each_call.end())) << config.name;
  EXPECT_LT(ready_at_each_call[ready_at_each_call.size() / 2], ready_at_each_call.back())
      << config.name << ": the gradients were all ready halfway through the queue";
  EXPECT_EQ(ready_at_each_call.back(), ready_count()) << config.name;
  expect_same_gradients(gradients_of(gpt), whole, device, config.name);
  for (const auto& [name, p] : params) {
    EXPECT_GE(ready[name], 1) << config.name << ": " << name << " never ready";
  }
}

class WeightGradientQueueTest : public testing::DeviceTest {};

TEST_P(WeightGradientQueueTest, GptBackwardSplitsIntoInputAndWeightHalves) {
  expect_split_backward_is_the_whole({"gpt-split", 2, 2, 16, 9, 23}, device());
}

TEST_P(WeightGradientQueueTest, LlamaBackwardSplitsIntoInputAndWeightHalves) {
  expect_split_backward_is_the_whole(
      {"llama-split", 2, 4, 16, 9, 23, DecoderFamily::kLlama, 2, 24, false, 100.0f}, device());
}

COURSE_INSTANTIATE_DEVICE_TESTS(WeightGradientQueueTest);

// The input gradient does not depend on the weight pass: B alone gives the whole backward's.
TEST(WeightGradientQueue, TheInputGradientIsTheWholeBackwards) {
  std::mt19937 rng(3);
  Linear linear(5, 4, rng, Device::cpu());
  const Tensor x = testing::random_tensor({6, 5}, DType::kF32, Device::cpu(), 4).tensor;
  const Tensor dy = testing::random_tensor({6, 4}, DType::kF32, Device::cpu(), 5).tensor;
  Context whole, split;
  linear.forward(x, whole);
  const std::vector<float> dx = linear.backward(dy, whole).to_vector<float>();
  const std::vector<float> dw = linear.weight.grad.to_vector<float>();
  WeightGradientQueue queue;
  linear.zero_grad();
  linear.forward(x, split);
  split.defer_weight_gradients(&queue);
  EXPECT_EQ(linear.backward(dy, split).to_vector<float>(), dx);
  EXPECT_EQ(linear.weight.grad.to_vector<float>(), std::vector<float>(dw.size(), 0.0f));
  queue.run();
  EXPECT_EQ(linear.weight.grad.to_vector<float>(), dw);
}

// Activation checkpointing recomputes the forward in backward: the recomputation's weight
// gradients go to the queue too, not into the gradients during the input-gradient half.
TEST(WeightGradientQueue, ACheckpointedModuleDefersItsWeightGradients) {
  const auto make = [] {
    std::mt19937 rng(5);
    return Checkpointed(std::make_unique<Linear>(5, 4, rng, Device::cpu()));
  };
  const Tensor x = testing::random_tensor({7, 5}, DType::kF32, Device::cpu(), 6).tensor;
  const Tensor dy = testing::random_tensor({7, 4}, DType::kF32, Device::cpu(), 7).tensor;
  Checkpointed whole = make(), split = make();
  const std::vector<float> dx = [&] {
    whole.forward(x);
    return whole.backward(dy).to_vector<float>();
  }();
  Context ctx;
  WeightGradientQueue queue;
  split.forward(x, ctx);
  ctx.defer_weight_gradients(&queue);
  EXPECT_EQ(split.backward(dy, ctx).to_vector<float>(), dx);
  for (Parameter* p : split.parameters()) {
    EXPECT_EQ(p->grad.to_vector<float>(), std::vector<float>(p->grad.numel(), 0.0f))
        << "a gradient changed in the input-gradient half";
  }
  ASSERT_FALSE(queue.empty());
  queue.run();
  const std::vector<Parameter*> got = split.parameters(), want = whole.parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]->grad.to_vector<float>(), want[i]->grad.to_vector<float>());
  }
}

}  // namespace
}  // namespace course::nn
