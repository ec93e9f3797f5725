// The dynamic loss scaler: its skips, back-offs and growth on the device, and its state kept on
// the host for ZeRO-Offload, the scale copied to the device for the backward.
#include "common/optim/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/kernels/elementwise.h"
#include "common/optim/optimizer.h"
#include "common/tensor/host_waits.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"

namespace course::optim {
namespace {

// The scaler's state and the skip stay on the device: unscaling, the skipped or taken update and
// the scale's update wait for nothing; the host reads the scale only when asked.
class LossScalerTest : public testing::DeviceTest {};

TEST_P(LossScalerTest, SkipsBacksOffAndGrowsOnTheDevice) {
  LossScaler scaler({.initial_scale = 1024.0f, .growth_interval = 2});
  nn::Parameter p(Tensor::from_vector<float>({1.0f, 1.0f}, {2}, device()));
  Sgd sgd({{"p", &p}}, {.lr = 1.0f, .momentum = 0.0f});
  const auto step = [&](const std::vector<float>& scaled_grad) {
    const Tensor grad = Tensor::from_vector<float>(scaled_grad, {2}, device());
    const HostWaits before = host_waits();
    copy_(p.grad, grad);
    scaler.unscale_and_check({&p});
    sgd.step(scaler.found_inf());
    scaler.update();
    return host_waits() - before;
  };
  EXPECT_EQ(step({2048.0f, -512.0f}), HostWaits{});  // unscaled (2, -0.5)
  EXPECT_EQ(p.grad.to_vector<float>(), (std::vector<float>{2.0f, -0.5f}));
  EXPECT_EQ(p.value.to_vector<float>(), (std::vector<float>{-1.0f, 1.5f}));
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(step({0.0f, 0.0f}), HostWaits{});
  EXPECT_EQ(scaler.scale(), 2048.0f);  // two clean steps: grow
  EXPECT_EQ(step({INFINITY, 1.0f}), HostWaits{});
  EXPECT_EQ(p.value.to_vector<float>(), (std::vector<float>{-1.0f, 1.5f})) << "not skipped";
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  step({1.0f, std::nanf("")});
  EXPECT_EQ(scaler.scale(), 512.0f);
  step({0.0f, 0.0f});
  EXPECT_EQ(scaler.scale(), 512.0f) << "the run of clean steps restarts after an overflow";
  step({1024.0f, 0.0f});
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(p.value.to_vector<float>(), (std::vector<float>{-3.0f, 1.5f}));
  EXPECT_EQ(scaler.skipped_steps(), 2);
  EXPECT_EQ(sgd.steps(), 6) << "attempted steps: the schedule moves on after a skipped one";
}

// The check in parts (the optimizer in backward's groups): one group's overflow stays marked
// through the later clean groups; unscale() divides alike and leaves the flag as it was.
TEST_P(LossScalerTest, ChecksGroupByGroupAndUnscalesWithoutMarking) {
  LossScaler scaler({.initial_scale = 4.0f});
  nn::Parameter first(Tensor::from_vector<float>({0.0f}, {1}, device()));
  nn::Parameter second(Tensor::from_vector<float>({0.0f, 0.0f}, {2}, device()));
  copy_(first.grad, Tensor::from_vector<float>({INFINITY}, {1}, device()));
  copy_(second.grad, Tensor::from_vector<float>({-6.0f, 2.0f}, {2}, device()));
  scaler.clear_found_inf(device());
  scaler.unscale_and_mark({&first});
  scaler.unscale_and_mark({&second});
  EXPECT_EQ(scaler.found_inf().to_vector<float>()[0], 1.0f);
  EXPECT_EQ(second.grad.to_vector<float>(), (std::vector<float>{-1.5f, 0.5f}));
  scaler.clear_found_inf(device());
  copy_(first.grad, Tensor::from_vector<float>({INFINITY}, {1}, device()));
  scaler.unscale({&first, &second});
  EXPECT_EQ(scaler.found_inf().to_vector<float>()[0], 0.0f) << "unscale() marked the flag";
  EXPECT_EQ(second.grad.to_vector<float>(), (std::vector<float>{-0.375f, 0.125f}));
}

COURSE_INSTANTIATE_DEVICE_TESTS(LossScalerTest);

// ZeRO-Offload: the state kept on the host, where the gradients it checks are; the scale the
// device's backward multiplies by is a copy there, made anew after each update.
TEST_P(LossScalerTest, KeptOnTheHostCopiesTheScaleToTheDevice) {
  LossScaler scaler({.initial_scale = 1024.0f, .growth_interval = 1});
  scaler.keep_state_on(testing::kCpu);
  const Tensor first = scaler.scale_tensor(device());
  EXPECT_EQ(first.device(), device());
  EXPECT_EQ(first.to_vector<float>(), std::vector<float>{1024.0f});
  EXPECT_EQ(scaler.state(device()).device(), testing::kCpu) << "the state stays where it is kept";
  nn::Parameter host_shard(Tensor::from_vector<float>({1.0f, -2.0f, 3.0f}, {3}));
  host_shard.grad = Tensor::from_vector<float>({512.0f, -INFINITY, 1.0f}, {3});
  scaler.unscale_and_check({&host_shard});
  EXPECT_NE(scaler.found_inf().to_vector<float>()[0], 0.0f);
  scaler.update();
  EXPECT_EQ(scaler.scale_tensor(device()).to_vector<float>(), std::vector<float>{512.0f})
      << "the device's copy follows the update";
  host_shard.grad = Tensor::from_vector<float>({512.0f, -256.0f, 0.0f}, {3});
  scaler.unscale_and_check({&host_shard});
  EXPECT_EQ(host_shard.grad.to_vector<float>(), (std::vector<float>{1.0f, -0.5f, 0.0f}));
  scaler.update();
  EXPECT_EQ(scaler.scale_tensor(device()).to_vector<float>(), std::vector<float>{1024.0f});
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(LossScaler, IsKeptOnlyWhereItsStateIsMade) {
  LossScaler scaler;
  scaler.state(Device::sim());
  const std::string error = testing::error_of([&] { scaler.keep_state_on(testing::kCpu); });
  EXPECT_NE(error.find("made on sim:0 before it was kept on cpu"), std::string::npos) << error;
  scaler.keep_state_on(Device::sim());  // where it is: allowed
}

}  // namespace
}  // namespace course::optim
