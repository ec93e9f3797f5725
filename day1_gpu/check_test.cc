// The day-1 check: tests of the exercises TP1.1-TP1.5 against independent references, with
// cases chosen so that plausible wrong answers fail. Built on the trainee's exercises
// (bazel test //day1_gpu:check) and on the solutions (//solutions/day1_gpu:check).
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "common/kernels/elementwise.h"
#include "common/nn/linear.h"
#include "day1_gpu/exercises.h"

namespace day1 {
namespace {

using course::DType;
using course::MemoryFormat;
using course::Shape;

// TP1.1 ----------------------------------------------------------------------------------

// On the CPU too, the step's batch must be a copy in the device's own memory: the loader's
// pinned buffer is not the step's (a later batch may be assembled in it).
void expect_copied_to(Device device) {
  const Batch host{Tensor::empty_pinned({2, 1, 2, 2}), Tensor::empty_pinned({2}, DType::kI64)};
  const std::vector<float> pixels = {1, 2, 3, 4, 5, 6, 7, 8};
  std::copy(pixels.begin(), pixels.end(), host.images.data_as<float>());
  host.labels.data_as<int64_t>()[0] = 3;
  host.labels.data_as<int64_t>()[1] = 9;
  const int64_t before = course::device_allocator(device).stats().allocated;
  Stream stream(device);
  const Batch moved = to_device(host, device, stream);
  stream.synchronize();
  for (const auto& [name, got, sent] : {std::tuple{"images", moved.images, host.images},
                                        std::tuple{"labels", moved.labels, host.labels}}) {
    ASSERT_TRUE(got.defined()) << name;
    EXPECT_EQ(got.device(), device) << name;
    EXPECT_NE(got.data(), sent.data()) << name << ": not copied, still the loader's buffer";
    EXPECT_FALSE(got.is_pinned()) << name << ": still in pinned host memory, not the device's";
    EXPECT_EQ(got.shape(), sent.shape()) << name;
    EXPECT_EQ(got.dtype(), sent.dtype()) << name;
  }
  EXPECT_GE(course::device_allocator(device).stats().allocated - before,
            static_cast<int64_t>(host.images.nbytes() + host.labels.nbytes()))
      << "the batch must be allocated on the training device";
  EXPECT_EQ(moved.images.to_vector<float>(), pixels);
  EXPECT_EQ(moved.labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 9}));
}

TEST(TP1_1, TheBatchIsCopiedIntoTheCpuDevicesMemory) { expect_copied_to(Device::cpu()); }

// The simulated accelerator counts what a GPU would make the host wait for: a copy from the
// loader's pinned buffer queued on the stream costs none, a synchronous one (to(device) without
// the stream) stalls the host twice per batch.
TEST(TP1_1, TheBatchIsCopiedToTheDeviceWithoutTheHostWaiting) {
  expect_copied_to(Device::sim(0));
  const Batch host{Tensor::empty_pinned({3, 1, 2, 2}), Tensor::empty_pinned({3}, DType::kI64)};
  Stream stream(Device::sim(0));
  const course::HostWaits before = course::host_waits();
  const Batch moved = to_device(host, Device::sim(0), stream);
  const course::HostWaits waits = course::host_waits() - before;
  EXPECT_EQ(waits.total(), 0) << "the host waited " << waits.copies << " time(s) for a copy and "
                              << waits.synchronizations
                              << " time(s) for the stream: queue the copies on `stream` (the "
                                 "caller orders the step after it)";
}

TEST(TP1_1, TheBatchIsCopiedToTheGpu) {
  if (course::cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: " << course::cuda_status();
  expect_copied_to(Device::cuda(0));
}

// TP1.2 ----------------------------------------------------------------------------------

struct Scaled {
  explicit Scaled(Device device = Device::cpu())
      : p(Tensor::from_vector<float>({1.0f, 2.0f}, {2}, device)) {}
  nn::Parameter p;
  optim::Sgd sgd{{{"p", &p}}, {.lr = 0.5f, .momentum = 0.0f}};
  optim::LossScaler scaler{{.initial_scale = 8.0f, .growth_interval = 3}};
};

TEST(TP1_2, FiniteGradientsAreUnscaledBeforeTheStep) {
  Scaled s;
  s.p.grad = Tensor::from_vector<float>({8.0f, -16.0f}, {2});  // gradient (1, -2) times scale 8
  scaled_optimizer_step(s.scaler, s.sgd, {&s.p});
  EXPECT_EQ(s.p.value.to_vector<float>(), (std::vector<float>{0.5f, 3.0f}));
  EXPECT_EQ(s.scaler.scale(), 8.0f);
  EXPECT_EQ(s.scaler.skipped_steps(), 0);
}

TEST(TP1_2, OverflowSkipsTheStepAndHalvesTheScale) {
  Scaled s;
  s.p.grad = Tensor::from_vector<float>({INFINITY, 1.0f}, {2});
  scaled_optimizer_step(s.scaler, s.sgd, {&s.p});
  EXPECT_EQ(s.p.value.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(s.scaler.scale(), 4.0f);
  EXPECT_EQ(s.scaler.skipped_steps(), 1);
  s.p.grad = Tensor::from_vector<float>({NAN, 1.0f}, {2});
  scaled_optimizer_step(s.scaler, s.sgd, {&s.p});
  EXPECT_EQ(s.p.value.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(s.scaler.scale(), 2.0f);
}

// A finite flag kept per parameter (overwritten by the last one) or a step taken before all
// gradients are unscaled both fail here: the overflow is in the first of three parameters.
TEST(TP1_2, AnOverflowInAnyParameterSkipsTheWholeStep) {
  nn::Parameter a(Tensor::from_vector<float>({1.0f}, {1})),
      b(Tensor::from_vector<float>({2.0f}, {1})), c(Tensor::from_vector<float>({3.0f, 4.0f}, {2}));
  optim::Sgd sgd({{"a", &a}, {"b", &b}, {"c", &c}}, {.lr = 1.0f, .momentum = 0.0f});
  optim::LossScaler scaler({.initial_scale = 4.0f});
  a.grad = Tensor::from_vector<float>({INFINITY}, {1});
  b.grad = Tensor::from_vector<float>({4.0f}, {1});
  c.grad = Tensor::from_vector<float>({8.0f, -4.0f}, {2});
  scaled_optimizer_step(scaler, sgd, {&a, &b, &c});
  EXPECT_EQ(b.value.to_vector<float>(), (std::vector<float>{2.0f}));
  EXPECT_EQ(c.value.to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.scale(), 2.0f);
  // The next step is clean: every parameter moves by its unscaled gradient (scale now 2).
  a.grad = Tensor::from_vector<float>({2.0f}, {1});
  b.grad = Tensor::from_vector<float>({-2.0f}, {1});
  c.grad = Tensor::from_vector<float>({4.0f, 6.0f}, {2});
  scaled_optimizer_step(scaler, sgd, {&a, &b, &c});
  EXPECT_EQ(a.value.to_vector<float>(), (std::vector<float>{0.0f}));
  EXPECT_EQ(b.value.to_vector<float>(), (std::vector<float>{3.0f}));
  EXPECT_EQ(c.value.to_vector<float>(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(TP1_2, TheScaleGrowsAfterCleanSteps) {
  Scaled s;
  for (int i = 0; i < 3; ++i) {
    s.p.grad = Tensor::from_vector<float>({0.0f, 0.0f}, {2});
    scaled_optimizer_step(s.scaler, s.sgd, {&s.p});
  }
  EXPECT_EQ(s.scaler.scale(), 16.0f);
}

// On the simulated accelerator, which counts what a GPU would make the host wait for: a step
// whose skip is decided on the host (reading the found-inf flag, or checking the gradients with a
// reduction) waits every step.
TEST(TP1_2, TheSkipIsDecidedOnTheDeviceWithoutAHostWait) {
  Scaled s(Device::sim(0));
  for (int step = 0; step < 3; ++step) {
    const Tensor grad =
        Tensor::from_vector<float>({step == 1 ? INFINITY : 8.0f, -16.0f}, {2}, Device::sim(0));
    const course::HostWaits before = course::host_waits();
    course::copy_(s.p.grad, grad);
    scaled_optimizer_step(s.scaler, s.sgd, {&s.p});
    const course::HostWaits waits = course::host_waits() - before;
    EXPECT_EQ(waits.total(), 0)
        << "step " << step << ": the host waited for the device (" << waits.str()
        << "): pass the scaler's found_inf() to the optimizer's step instead of testing it";
  }
  // (1, 2) - 0.5 (1, -2), skipped, then - 0.5 (2, -4) at the halved scale.
  EXPECT_EQ(s.p.value.to_vector<float>(), (std::vector<float>{-0.5f, 5.0f}));
  EXPECT_EQ(s.scaler.skipped_steps(), 1);
}

// TP1.3 ----------------------------------------------------------------------------------

TEST(TP1_3, ImagesBecomeChannelsLastWithTheSameValues) {
  std::vector<float> values(2 * 3 * 4 * 5);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const Tensor images = Tensor::from_vector(values, {2, 3, 4, 5});
  const Tensor nhwc = to_channels_last(images);
  EXPECT_EQ(nhwc.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.shape(), images.shape());
  EXPECT_EQ(nhwc.strides(), (std::vector<int64_t>{60, 1, 15, 3}));
  // Element (n=1, c=2, h=3, w=4) sits at 1*60 + 2*1 + 3*15 + 4*3 in storage.
  EXPECT_EQ(nhwc.data_as<float>()[60 + 2 + 45 + 12], values[((1 * 3 + 2) * 4 + 3) * 5 + 4]);
}

// TP1.4 ----------------------------------------------------------------------------------

TEST(TP1_4, RecordsOnlyTheActiveSteps) {
  std::vector<int64_t> recorded;
  for (int64_t step = 0; step < 20; ++step) {
    if (record_step(step, {})) recorded.push_back(step);
  }
  EXPECT_EQ(recorded, (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_FALSE(record_step(4, {.wait = 3, .warmup = 2, .active = 1}));
  EXPECT_TRUE(record_step(5, {.wait = 3, .warmup = 2, .active = 1}));
  EXPECT_FALSE(record_step(6, {.wait = 3, .warmup = 2, .active = 1}));
}

// TP1.5 ----------------------------------------------------------------------------------

TEST(TP1_5, ModelMemoryCountsParametersGradientsAndOptimizerState) {
  std::mt19937 rng(0);
  nn::Linear fc(3, 2, rng, Device::cpu());  // 6 weights + 2 biases = 8 floats = 32 bytes
  auto params = fc.parameters();
  optim::Sgd sgd(fc.state().parameters, {});
  EXPECT_EQ(model_memory_bytes(params, sgd), 3 * 32);  // values, gradients, momentum
  optim::AdamW adam(fc.state().parameters, {});
  EXPECT_EQ(model_memory_bytes(params, adam), 4 * 32);  // values, gradients, two moments
}

}  // namespace
}  // namespace day1
