// Optimizers (SGD, AdamW, LARS, LAMB, Lion) against hand-computed updates, schedules against
// hand-computed values of their formulas, the loss scaler's skip / back-off / growth rules, and
// captured updates against eager ones.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "common/kernels/elementwise.h"
#include "common/optim/large_batch.h"
#include "common/optim/lion.h"
#include "common/optim/loss_scaler.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/optimizer.h"
#include "common/optim/schedule.h"
#include "common/tensor/graph.h"
#include "common/tensor/host_waits.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::optim {
namespace {

using testing::all_close;

struct OneParam {
  nn::Parameter p{Tensor::from_vector<float>({1.0f, -2.0f}, {2})};
  std::vector<std::pair<std::string, nn::Parameter*>> list() { return {{"w", &p}}; }
  void set_grad(float a, float b) { p.grad = Tensor::from_vector<float>({a, b}, {2}); }
  std::vector<float> value() const { return p.value.to_vector<float>(); }
};

TEST(Sgd, MomentumNesterovAndWeightDecayByHand) {
  OneParam m;
  Sgd sgd(m.list(), {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f});
  m.set_grad(0.5f, 1.0f);
  sgd.step();  // g = grad + 0.01 p = (0.51, 0.98); buf = g; p -= 0.1 g
  EXPECT_TRUE(all_close(m.value(), {1.0f - 0.051f, -2.0f - 0.098f}, {1e-6, 1e-6}));
  m.set_grad(0.5f, 1.0f);
  sgd.step();  // g = (0.5 + 0.00949, 1 - 0.02098); buf = 0.9 * (0.51, 0.98) + g
  const float g0 = 0.5f + 0.01f * 0.949f, g1 = 1.0f + 0.01f * -2.098f;
  EXPECT_TRUE(all_close(m.value(),
                        {0.949f - 0.1f * (0.9f * 0.51f + g0), -2.098f - 0.1f * (0.9f * 0.98f + g1)},
                        {1e-6, 1e-6}));
  OneParam n;
  Sgd nesterov(n.list(), {.lr = 0.1f, .momentum = 0.5f, .nesterov = true});
  n.set_grad(1.0f, 2.0f);
  nesterov.step();  // buf = g; step = g + 0.5 buf = 1.5 g
  EXPECT_TRUE(all_close(n.value(), {1.0f - 0.15f, -2.0f - 0.3f}, {1e-6, 1e-6}));
}

TEST(AdamW, FirstStepsByHand) {
  OneParam m;
  AdamW adam(m.list(), {.lr = 0.01f, .weight_decay = 0.1f});
  m.set_grad(0.3f, -4.0f);
  adam.step();  // bias-corrected m/sqrt(v) = sign(g) on the first step
  EXPECT_TRUE(all_close(m.value(), {1.0f * (1 - 0.001f) - 0.01f, -2.0f * (1 - 0.001f) + 0.01f},
                        {1e-6, 1e-5}));
  EXPECT_EQ(adam.state_tensors().size(), 2u);
}

TEST(Lion, SignStepsAndTheMomentumByHand) {
  OneParam m;
  Lion lion(m.list(), {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.99f, .weight_decay = 0.5f});
  m.set_grad(0.3f, -4.0f);
  lion.step();  // m = 0: c = 0.1 g, so each element moves by lr against g's sign, after decay
  EXPECT_TRUE(all_close(m.value(), {1.0f * (1 - 0.005f) - 0.01f, -2.0f * (1 - 0.005f) + 0.01f},
                        {1e-6, 1e-6}));
  // m = 0.01 g = (0.003, -0.04). With g = (-0.02, 0.3): c = 0.9 m + 0.1 g = (0.0007, -0.006):
  // the momentum outvotes the gradient, so the step keeps its sign; the new m = 0.99 m + 0.01 g.
  m.set_grad(-0.02f, 0.3f);
  const std::vector<float> before = m.value();
  lion.step();
  EXPECT_TRUE(all_close(m.value(),
                        {before[0] * (1 - 0.005f) - 0.01f, before[1] * (1 - 0.005f) + 0.01f},
                        {1e-6, 1e-6}));
  const std::vector<float> momentum = lion.state_tensors()[0].second->to_vector<float>();
  EXPECT_TRUE(all_close(momentum, {0.99f * 0.003f + 0.01f * -0.02f, 0.99f * -0.04f + 0.01f * 0.3f},
                        {1e-7, 1e-6}));
  // A zero interpolation does not move the element (the sign of 0 is 0), decay aside.
  OneParam z;
  Lion still(z.list(), {.lr = 0.01f});
  z.set_grad(0.0f, 1.0f);
  still.step();
  EXPECT_EQ(z.value()[0], 1.0f);
  EXPECT_THROW(Lion(z.list(), {.beta2 = 1.0f}), Error);
}

TEST(Lars, TrustRatioScalesTheMomentumStepByHand) {
  OneParam m;  // ||w|| = sqrt(5), ||g|| = sqrt(5) / 2
  Lars lars(m.list(), {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .eta = 0.001f});
  m.set_grad(0.5f, 1.0f);
  lars.step();  // trust = 0.001 sqrt(5) / (sqrt(5) / 2 + 0.01 sqrt(5)) = 0.001 / 0.51
  const float trust = 0.001f / 0.51f;
  const std::vector<float> w1 = {1.0f - 0.1f * trust * 0.51f, -2.0f - 0.1f * trust * 0.98f};
  EXPECT_TRUE(all_close(m.value(), w1, {1e-7, 1e-6}));
  m.set_grad(0.0f, 0.0f);  // no gradient: trust 1, only weight decay moves w (with momentum)
  lars.step();
  EXPECT_TRUE(all_close(m.value(),
                        {w1[0] - 0.1f * (0.9f * trust * 0.51f + 0.01f * w1[0]),
                         w1[1] - 0.1f * (0.9f * trust * 0.98f + 0.01f * w1[1])},
                        {1e-7, 1e-6}));
}

TEST(Lamb, FirstStepByHand) {
  OneParam m;
  Lamb lamb(m.list(), {.lr = 0.01f, .weight_decay = 0.01f});
  m.set_grad(0.3f, -4.0f);
  lamb.step();  // Adam direction sign(g); r = (1, -1) + 0.01 w = (1.01, -1.02)
  const float trust = std::sqrt(5.0f) / std::sqrt(1.01f * 1.01f + 1.02f * 1.02f);
  EXPECT_TRUE(all_close(m.value(), {1.0f - 0.01f * trust * 1.01f, -2.0f + 0.01f * trust * 1.02f},
                        {1e-6, 1e-5}));
  EXPECT_EQ(lamb.state_tensors().size(), 2u);
}

// One fused launch over several parameters gives each the update it gets alone.
using ParamList = std::vector<std::pair<std::string, nn::Parameter*>>;

// Each optimizer's fused update of several tensors, in one launch whose CPU spans (4096
// elements) start and end inside tensors, equals the update of each tensor on its own.
void expect_fused_equals_one_by_one(
    const std::function<std::unique_ptr<Optimizer>(const ParamList&)>& make) {
  std::vector<nn::Parameter> params;
  for (int64_t size : {1, 7, 4097, 5003}) {
    std::vector<float> v(size), g(size);
    for (int64_t i = 0; i < size; ++i) v[i] = 0.01f * i - 1, g[i] = std::sin(0.1f * i);
    params.emplace_back(Tensor::from_vector(v, {size}));
    params.back().grad = Tensor::from_vector(g, {size});
  }
  std::vector<nn::Parameter> alone;
  for (const auto& p : params) {
    alone.emplace_back(p.value.clone());
    alone.back().grad = p.grad.clone();
  }
  ParamList all;
  for (auto& p : params) all.emplace_back("p", &p);
  const std::unique_ptr<Optimizer> fused = make(all);
  std::vector<std::unique_ptr<Optimizer>> singles;
  for (auto& p : alone) singles.push_back(make({{"p", &p}}));
  for (int step = 0; step < 3; ++step) {
    fused->step();
    for (auto& s : singles) s->step();
  }
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].value.to_vector<float>(), alone[i].value.to_vector<float>()) << i;
  }
}

TEST(Optimizers, FusedUpdateOfManyParametersEqualsOneByOne) {
  expect_fused_equals_one_by_one([](const ParamList& list) -> std::unique_ptr<Optimizer> {
    return std::make_unique<AdamW>(list, AdamWOptions{.lr = 0.01f, .weight_decay = 0.1f});
  });
  expect_fused_equals_one_by_one([](const ParamList& list) -> std::unique_ptr<Optimizer> {
    return std::make_unique<Sgd>(
        list, SgdOptions{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true});
  });
  expect_fused_equals_one_by_one([](const ParamList& list) -> std::unique_ptr<Optimizer> {
    return std::make_unique<Lion>(list, LionOptions{.lr = 0.01f, .weight_decay = 0.5f});
  });
}

TEST(Optimizers, BadOptionsAreErrors) {
  OneParam m;
  EXPECT_THROW(Sgd(m.list(), {.lr = -1.0f}), Error);
  EXPECT_THROW(Sgd(m.list(), {.momentum = 0.0f, .nesterov = true}), Error);
  EXPECT_THROW(AdamW(m.list(), {.beta1 = 1.0f}), Error);
}

TEST(Schedule, OneCycleFollowsOneCycleLR) {
  // OneCycleLR(max_lr=1, total_steps=10), pct_start 0.3, div 25, final_div 1e4, cosine: the
  // warm phase ends at step 0.3 * 10 - 1 = 2, so step 1 is halfway up (0.04 + 0.96 / 2) and
  // step 3 is 1/7 of the way down: 0.5 * (cos(pi / 7) + 1) = 0.9504846; step 9 is 1 / 25e4.
  auto schedule = one_cycle_schedule(1.0f, 10);
  EXPECT_NEAR(schedule->lr_at(0), 0.04f, 1e-6);
  EXPECT_NEAR(schedule->lr_at(1), 0.52f, 1e-6);
  EXPECT_NEAR(schedule->lr_at(2), 1.0f, 1e-6);
  EXPECT_NEAR(schedule->lr_at(3), 0.9504846f, 1e-5);
  EXPECT_NEAR(schedule->lr_at(9), 4e-6f, 1e-8);
}

TEST(Schedule, CosineWarmupAndNames) {
  auto cosine = cosine_schedule(1.0f, 100, 0.2f);
  EXPECT_FLOAT_EQ(cosine->lr_at(0), 1.0f);
  EXPECT_NEAR(cosine->lr_at(50), 0.6f, 1e-6);
  EXPECT_FLOAT_EQ(cosine->lr_at(100), 0.2f);
  auto warm = with_warmup(constant_schedule(0.8f), 4);
  EXPECT_FLOAT_EQ(warm->lr_at(0), 0.2f);
  EXPECT_FLOAT_EQ(warm->lr_at(3), 0.8f);
  EXPECT_FLOAT_EQ(warm->lr_at(10), 0.8f);
  // By kind: the cosine's floor and the warm-up are passed through.
  auto named = make_schedule(ScheduleKind::kCosine, 1.0f, 100, 10, 0.2f);
  EXPECT_FLOAT_EQ(named->lr_at(0), 0.1f);  // warm-up step 1 of 10 towards lr_at(0) = 1
  EXPECT_NEAR(named->lr_at(50), 0.6f, 1e-6);
  EXPECT_FLOAT_EQ(named->lr_at(100), 0.2f);
  std::set<std::string> names;
  for (const auto& [name, kind] : schedule_choices()) {
    EXPECT_EQ(schedule_name(kind), name);
    names.insert(name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"one-cycle", "cosine", "constant", "linear"}));
  // DeepSpeed's WarmupDecayLR: up over 2 steps, then linearly to 0 at step 10.
  auto linear = make_schedule(ScheduleKind::kLinear, 1.0f, 10, 2);
  EXPECT_FLOAT_EQ(linear->lr_at(0), 0.5f);
  EXPECT_FLOAT_EQ(linear->lr_at(2), 1.0f);
  EXPECT_FLOAT_EQ(linear->lr_at(6), 0.5f);
  EXPECT_FLOAT_EQ(linear->lr_at(9), 0.125f);
  EXPECT_FLOAT_EQ(linear->lr_at(10), 0.0f);
  EXPECT_FLOAT_EQ(linear->lr_at(12), 0.0f);
  EXPECT_THROW(make_schedule(ScheduleKind::kLinear, 1.0f, 10, 10), Error);
  // DeepSpeed's WarmupLR with its defaults (log, 1000 steps, up to 0.001): at its iteration
  // i = step + 1 the rate is 0.001 log(i + 1) / log(1000), a third of it at i = 9, two thirds at
  // i = 99, all of it from i = 1000. With fewer than 2 steps it warms up over 2, as DeepSpeed.
  auto log_warmup = make_schedule(ScheduleKind::kConstant, 1e-3f, 5000, 1000, 0, WarmupShape::kLog);
  EXPECT_FLOAT_EQ(log_warmup->lr_at(0), 1e-3f * std::log(2.0f) / std::log(1000.0f));
  EXPECT_FLOAT_EQ(log_warmup->lr_at(8), 1e-3f / 3);
  EXPECT_FLOAT_EQ(log_warmup->lr_at(98), 2e-3f / 3);
  EXPECT_FLOAT_EQ(log_warmup->lr_at(999), 1e-3f);
  EXPECT_FLOAT_EQ(log_warmup->lr_at(4000), 1e-3f);
  EXPECT_FLOAT_EQ(with_warmup(constant_schedule(1.0f), 1, WarmupShape::kLog)->lr_at(0), 1.0f);
  EXPECT_STREQ(warmup_shape_name(WarmupShape::kLog), "log");
  EXPECT_THROW(one_cycle_schedule(1.0f, 2), Error);
  const std::string error = course::testing::error_of([] { one_cycle_schedule(1.0f, 3); });
  EXPECT_NE(error.find("3 step(s)"), std::string::npos) << error;
  EXPECT_NE(error.find("--epochs"), std::string::npos) << "the message names what to change";
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, nn::Parameter& p) {
  std::vector<std::pair<std::string, nn::Parameter*>> list{{"w", &p}};
  if (name == "sgd") {
    return std::make_unique<Sgd>(list, SgdOptions{.momentum = 0.9f, .weight_decay = 0.01f});
  }
  if (name == "lars") return std::make_unique<Lars>(list, LarsOptions{.weight_decay = 0.01f});
  if (name == "lamb") return std::make_unique<Lamb>(list, LambOptions{});
  return std::make_unique<AdamW>(list, AdamWOptions{.weight_decay = 0.1f});
}

// The graph replays update() alone; the learning rate and the bias corrections set between
// replays must reach it, so it matches eager steps bit for bit; LARS's and LAMB's trust ratios
// are computed on the device inside it. As in the labs, the first step is eager (it builds the
// update's pointer table, which a capture cannot copy in).
TEST(CapturedUpdate, FollowsTheScheduleSetBetweenReplays) {
  for (const std::string name : {"sgd", "adamw", "lars", "lamb"}) {
    const Tensor start = testing::random_tensor({300}, DType::kF32, Device::cpu(), 1).tensor;
    nn::Parameter eager_p(start.clone()), graph_p(start.clone());
    const auto eager = make_optimizer(name, eager_p), graphed = make_optimizer(name, graph_p);
    Graph graph(Device::cpu());
    for (uint32_t step = 0; step < 6; ++step) {
      const Tensor grad =
          testing::random_tensor({300}, DType::kF32, Device::cpu(), 10 + step).tensor;
      copy_(eager_p.grad, grad);
      copy_(graph_p.grad, grad);
      const float lr = 0.01f * static_cast<float>(step + 1);
      eager->set_lr(lr);
      eager->step();
      graphed->set_lr(lr);
      graphed->prepare_step();
      if (step == 0) {
        graphed->update();
      } else {
        if (!graph.captured()) graph.capture([&] { graphed->update(); });
        graph.replay();
      }
      graphed->count_step();
      ASSERT_EQ(graph_p.value.to_vector<float>(), eager_p.value.to_vector<float>())
          << name << " step " << step;
    }
    EXPECT_EQ(graphed->steps(), 6);
  }
}

// Updating the parameters group by group (the optimizer in backward: one launch per bucket, or
// one per parameter in one process) is the one fused update, element for element: five
// parameters of uneven sizes (one of several chunks of LARS's and LAMB's norms) in groups of 2, 1
// and 2 and in groups of one each, every optimizer, over four steps of new gradients.
TEST(UpdateGroups, GroupByGroupIsTheFusedUpdateBitForBit) {
  const std::vector<int64_t> sizes = {7, 40001, 1, 64, 33};
  const std::vector<std::vector<std::vector<size_t>>> groupings = {{{4, 1}, {0}, {2, 3}},
                                                                   {{0}, {1}, {2}, {3}, {4}}};
  for (const auto& [name, kind] : optimizer_choices(false)) {
    for (const auto& grouping : groupings) {
      std::vector<std::unique_ptr<nn::Parameter>> fused, grouped;
      std::vector<std::pair<std::string, nn::Parameter*>> fused_list, grouped_list;
      for (size_t i = 0; i < sizes.size(); ++i) {
        const Tensor start =
            testing::random_tensor({sizes[i]}, DType::kF32, Device::cpu(), 50 + i).tensor;
        fused.push_back(std::make_unique<nn::Parameter>(start.clone()));
        grouped.push_back(std::make_unique<nn::Parameter>(start.clone()));
        fused_list.emplace_back("p" + std::to_string(i), fused.back().get());
        grouped_list.emplace_back("p" + std::to_string(i), grouped.back().get());
      }
      const OptimizerFlags flags{.kind = kind, .lr = 0.01f, .weight_decay = 0.05f};
      const auto one = course::optim::make_optimizer(flags, fused_list);
      const auto by_group = course::optim::make_optimizer(flags, grouped_list);
      by_group->set_update_groups(grouping);
      for (uint32_t step = 0; step < 4; ++step) {
        for (size_t i = 0; i < sizes.size(); ++i) {
          const Tensor grad =
              testing::random_tensor({sizes[i]}, DType::kF32, Device::cpu(), 90 + 7 * step + i)
                  .tensor;
          copy_(fused[i]->grad, grad);
          copy_(grouped[i]->grad, grad);
        }
        one->step();
        by_group->prepare_step();
        for (size_t g = grouping.size(); g-- > 0;) by_group->update_group(g);  // any order
        by_group->count_step();
        for (size_t i = 0; i < sizes.size(); ++i) {
          ASSERT_EQ(grouped[i]->value.to_vector<float>(), fused[i]->value.to_vector<float>())
              << name << ", " << grouping.size() << " groups, step " << step << ", parameter " << i;
        }
      }
    }
  }
}

TEST(UpdateGroups, RefuseAParameterLeftOutOrNamedTwice) {
  nn::Parameter a(zeros({3})), b(zeros({2}));
  AdamW adamw({{"a", &a}, {"b", &b}}, AdamWOptions{});
  EXPECT_NE(testing::error_of([&] { adamw.set_update_groups({{0}}); }).find("every parameter"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              adamw.set_update_groups({{0, 1}, {1}});
            }).find("once"),
            std::string::npos);
}

// Every optimizer skips an overflowed step(found_inf): SGD, AdamW and Lion on the device, with no
// host wait; LARS and LAMB, whose trust ratios move the weights after the fused update, by one
// read of the flag on the host. The skipped step leaves the weights and the state as they were
// (and still counts, so the schedule moves on); the steps around it are those of a twin never
// given the flag, bit for bit. Uneven sizes, signed gradients; the overflow at the third step.
class SkippedStepTest : public testing::DeviceTest {};

TEST_P(SkippedStepTest, LeavesWeightsAndStateAsTheyWere) {
  for (const auto& [name, kind] : optimizer_choices(false)) {
    const OptimizerFlags flags{.kind = kind, .lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.01f};
    std::vector<std::unique_ptr<nn::Parameter>> params, twins;
    ParamList list, twin_list;
    for (int64_t size : {37, 5}) {
      const Tensor start = testing::random_tensor({size}, DType::kF32, device(), size).tensor;
      params.push_back(std::make_unique<nn::Parameter>(start.clone()));
      twins.push_back(std::make_unique<nn::Parameter>(start.clone()));
      list.emplace_back("p" + std::to_string(size), params.back().get());
      twin_list.emplace_back("p" + std::to_string(size), twins.back().get());
    }
    const auto optimizer = make_optimizer(flags, list), twin = make_optimizer(flags, twin_list);
    Tensor found_inf = zeros({1}, DType::kF32, device());
    const auto snapshot = [&] {
      std::vector<std::vector<float>> all;
      for (const auto& [n, p] : list) all.push_back(p->value.to_vector<float>());
      for (auto& [n, t] : optimizer->state_tensors()) all.push_back(t->to_vector<float>());
      return all;
    };
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < params.size(); ++i) {
        const Tensor grad =
            testing::random_tensor(params[i]->value.shape(), DType::kF32, device(), 90 + step)
                .tensor;
        copy_(params[i]->grad, grad);
        copy_(twins[i]->grad, grad);
      }
      const bool overflow = step == 2;
      fill_(found_inf, overflow ? 1.0 : 0.0);
      const std::vector<std::vector<float>> before = snapshot();
      const HostWaits waits_before = host_waits();
      optimizer->step(found_inf);
      const HostWaits waits = host_waits() - waits_before;
      const bool host_reads = device().is_accelerator() && !optimizer->skips_on_device();
      EXPECT_EQ(waits, (HostWaits{.reads = host_reads ? 1 : 0})) << name << ": " << waits.str();
      if (overflow) {
        EXPECT_EQ(snapshot(), before) << name << ": the skipped step moved something";
        twin->prepare_step();
        twin->count_step();
      } else {
        twin->step();
      }
      for (size_t i = 0; i < params.size(); ++i) {
        EXPECT_EQ(params[i]->value.to_vector<float>(), twins[i]->value.to_vector<float>())
            << name << " after step " << step;
      }
    }
    EXPECT_EQ(optimizer->steps(), 4) << name;
    EXPECT_EQ(optimizer->skips_on_device(), updates_elementwise(kind)) << name;
  }
}

COURSE_INSTANTIATE_DEVICE_TESTS(SkippedStepTest);

}  // namespace
}  // namespace course::optim
