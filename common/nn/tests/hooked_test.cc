// Hooks around wrapped modules: they run in the order FSDP needs (pre-forward, post-forward per
// block in order; pre-backward, post-backward in reverse), and a block whose weights are
// "freed" after its forward and "gathered" again before its backward (as FSDP does with
// shards) gives gradients identical to the unhooked model's. Names are unchanged.
#include "common/nn/hooked.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/nn/activation.h"
#include "common/nn/linear.h"
#include "common/nn/sequential.h"
#include "common/testing/parameter_values.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

// Linear 6 -> 5 -> ReLU -> 4, the linears optionally wrapped by `wrap`.
Sequential network(const std::function<ModulePtr(ModulePtr, int)>& wrap) {
  std::mt19937 rng(4);
  Sequential s;
  s.add(wrap(std::make_unique<Linear>(6, 5, rng, Device::cpu()), 0));
  s.add(std::make_unique<ReLU>());
  s.add(wrap(std::make_unique<Linear>(5, 4, rng, Device::cpu()), 1));
  return s;
}

std::vector<float> step_gradients(Sequential& s) {
  const Tensor x = testing::random_tensor({3, 6}, DType::kF32, Device::cpu(), 1).tensor;
  const Tensor dy = testing::random_tensor({3, 4}, DType::kF32, Device::cpu(), 2).tensor;
  s.zero_grad();
  s.forward(x);
  s.backward(dy);
  return testing::parameter_gradients(s);
}

TEST(Hooked, HooksRunAroundEachBlockInTheOrderFsdpNeeds) {
  std::vector<std::string> events;
  Sequential s = network([&](ModulePtr inner, int block) -> ModulePtr {
    const std::string b = std::to_string(block);
    return std::make_unique<Hooked>(
        std::move(inner),
        ModuleHooks{
            .pre_forward = [&events, b](Module&) { events.push_back("pre-forward " + b); },
            .post_forward = [&events, b](Module&) { events.push_back("post-forward " + b); },
            .pre_backward = [&events, b](Module&) { events.push_back("pre-backward " + b); },
            .post_backward = [&events, b](Module&) { events.push_back("post-backward " + b); }});
  });
  step_gradients(s);
  EXPECT_EQ(events, (std::vector<std::string>{"pre-forward 0", "post-forward 0", "pre-forward 1",
                                              "post-forward 1", "pre-backward 1", "post-backward 1",
                                              "pre-backward 0", "post-backward 0"}));
  std::vector<std::string> names;
  for (const auto& [name, p] : s.state().parameters) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
}

TEST(Hooked, WeightsFreedAfterForwardAndGatheredBeforeBackwardGiveTheSameGradients) {
  Sequential plain = network([](ModulePtr inner, int) { return inner; });
  // The "full" weights live off to the side, as a rank's gathered shards would.
  std::vector<std::vector<Tensor>> saved(2);
  const auto gather = [&](Module& m, int block) {
    auto params = m.parameters();
    for (size_t i = 0; i < params.size(); ++i) copy_(params[i]->value, saved[block][i]);
  };
  const auto release = [](Module& m) {
    for (Parameter* p : m.parameters()) fill_(p->value, 0.0);
  };
  Sequential sharded = network([&](ModulePtr inner, int block) -> ModulePtr {
    for (Parameter* p : inner->parameters()) saved[block].push_back(p->value.clone());
    release(*inner);
    return std::make_unique<Hooked>(
        std::move(inner), ModuleHooks{.pre_forward = [&, block](Module& m) { gather(m, block); },
                                      .post_forward = release,
                                      .pre_backward = [&, block](Module& m) { gather(m, block); },
                                      .post_backward = release});
  });
  EXPECT_EQ(step_gradients(sharded), step_gradients(plain));
  for (Parameter* p : sharded.parameters()) {
    for (float v : p->value.to_vector<float>()) ASSERT_EQ(v, 0.0f) << "released after backward";
  }
}

}  // namespace
}  // namespace course::nn
