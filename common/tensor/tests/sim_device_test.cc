// The simulated accelerator (device.h): a device of its own in host memory, so CI sees what only
// a GPU would show. Its names parse and are bounded; its memory comes from its own allocator; a
// tensor on it and one on the CPU are different devices to every check, with both named; a copy
// between it and the host counts the host's wait as a GPU's would, and one within it does not;
// synchronising its streams and events counts, the CPU's never; inside a graph capture it
// refuses what CUDA's stream capture refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/core/error.h"
#include "common/tensor/graph.h"
#include "common/tensor/stream.h"
#include "common/tensor/tensor.h"

namespace course {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(SimDevice, NamesParseAndAreBounded) {
  EXPECT_EQ(parse_device("sim"), Device::sim(0));
  EXPECT_EQ(parse_device("sim:3"), Device::sim(3));
  EXPECT_EQ(Device::sim(5).str(), "sim:5");
  EXPECT_NE(Device::sim(0), Device::cpu());
  EXPECT_NE(Device::sim(0), Device::cuda(0));
  EXPECT_TRUE(Device::sim(0).is_accelerator() && Device::sim(0).runs_host_kernels());
  EXPECT_FALSE(Device::cpu().is_accelerator());
  EXPECT_FALSE(Device::cuda(0).runs_host_kernels());
  for (const char* bad : {"sim:", "sim:x", "sim:-1", "sim0", "simulated"}) {
    EXPECT_THAT([&] { parse_device(bad); }, ::testing::ThrowsMessage<Error>(HasSubstr("sim:N")))
        << bad;
  }
  EXPECT_NO_THROW(require_device(Device::sim(kSimDevices - 1)));
  EXPECT_THAT([] { require_device(Device::sim(kSimDevices)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("sim:0 to sim:7")));
}

TEST(SimDevice, EachHasItsOwnAllocator) {
  CachingAllocator& cpu = device_allocator(Device::cpu());
  CachingAllocator& sim0 = device_allocator(Device::sim(0));
  CachingAllocator& sim1 = device_allocator(Device::sim(1));
  EXPECT_NE(&sim0, &cpu);
  EXPECT_NE(&sim0, &sim1);
  const int64_t cpu_before = cpu.stats().allocated, sim0_before = sim0.stats().allocated;
  const int64_t sim1_before = sim1.stats().allocated;
  {
    const Tensor t = Tensor::empty({1000}, DType::kF32, Device::sim(1));
    EXPECT_EQ(t.device(), Device::sim(1));
    EXPECT_EQ(sim1.stats().allocated - sim1_before, 4096);  // 4000 bytes in a 512-byte block
    EXPECT_EQ(sim0.stats().allocated, sim0_before);
    EXPECT_EQ(cpu.stats().allocated, cpu_before);
  }
  EXPECT_EQ(sim1.stats().allocated, sim1_before);
  EXPECT_EQ(sim1.name(), "sim:1");
}

TEST(SimDevice, ATensorThereIsNotACpuTensor) {
  const Tensor on_sim = Tensor::from_vector<float>({1, 2, 3}, {3}, Device::sim(0));
  const Tensor on_cpu = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_THAT([&] { check_same(on_cpu, on_sim, "an addition"); },
              ::testing::ThrowsMessage<Error>(
                  AllOf(HasSubstr("an addition"), HasSubstr("cpu"), HasSubstr("sim:0"))));
  EXPECT_THAT([&] { check_same(on_sim, on_sim.to(Device::sim(1)), "a copy"); },
              ::testing::ThrowsMessage<Error>(AllOf(HasSubstr("sim:0"), HasSubstr("sim:1"))));
  EXPECT_EQ(on_sim.to(Device::sim(1)).to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

// A GPU's blocking reads and synchronous copies, counted alike on the simulated device.
TEST(SimDevice, CopiesWithTheHostAreHostWaitsAndCopiesWithinItAreNot) {
  const Device sim = Device::sim(0);
  HostWaits before = host_waits();
  const Tensor on_sim = Tensor::from_vector<float>({1.5f, -2, 3}, {3}, sim);  // a pageable copy
  EXPECT_EQ(host_waits() - before, (HostWaits{.copies = 1}));
  before = host_waits();
  const Tensor copy = on_sim.clone();
  const Tensor other = on_sim.to(Device::sim(2));
  EXPECT_EQ((host_waits() - before).total(), 0);
  EXPECT_EQ(copy.device(), sim);
  before = host_waits();
  EXPECT_EQ(copy.to_vector<float>(), (std::vector<float>{1.5f, -2, 3}));
  EXPECT_EQ(other.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1.5f, -2, 3}));
  EXPECT_EQ(host_waits() - before, (HostWaits{.reads = 2}));  // the CPU's own read is free
  before = host_waits();
  const Tensor on_cpu = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_EQ(on_cpu.to_vector<float>().size(), 2u);
  EXPECT_EQ((host_waits() - before).total(), 0);
}

TEST(SimDevice, AStreamCopiesFromPinnedMemoryWithoutAWaitAndFromPageableWithOne) {
  const Device sim = Device::sim(0);
  Stream copies(sim);
  Tensor pinned = Tensor::empty_pinned({4});
  Tensor pageable = Tensor::empty({4});
  for (int i = 0; i < 4; ++i) {
    pinned.data_as<float>()[i] = static_cast<float>(i) - 1.5f;
    pageable.data_as<float>()[i] = static_cast<float>(i) * 2;
  }
  HostWaits before = host_waits();
  const Tensor from_pinned = pinned.to(sim, copies);
  EXPECT_EQ((host_waits() - before).total(), 0);
  const Tensor from_pageable = pageable.to(sim, copies);
  EXPECT_EQ(host_waits() - before, (HostWaits{.copies = 1}));
  EXPECT_EQ(from_pinned.device(), sim);
  EXPECT_EQ(from_pinned.to_vector<float>(), (std::vector<float>{-1.5f, -0.5f, 0.5f, 1.5f}));
  EXPECT_EQ(from_pageable.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
  EXPECT_THAT([&] { pinned.to(Device::sim(1), copies); },
              ::testing::ThrowsMessage<Error>(HasSubstr("queued on a stream of sim:0")));
}

TEST(SimDevice, SynchronisingItsStreamsAndEventsIsAHostWaitAndTheCpusIsNot) {
  for (const Device device : {Device::cpu(), Device::sim(3)}) {
    Stream stream(device);
    Event event(device);
    event.record(&stream);
    const HostWaits before = host_waits();
    stream.synchronize();
    event.synchronize();
    event.block(&stream);  // the device waits, not the host
    EXPECT_EQ((host_waits() - before).synchronizations, device.is_cpu() ? 0 : 2) << device.str();
  }
}

// While it captures a graph the simulated accelerator refuses what CUDA's stream capture refuses,
// naming the call (on a GPU each would invalidate the capture): synchronising a stream or an
// event, querying an event or its time, and allocating outside the graph's pool (page-locked
// memory, another device's). Outside a capture the same calls run.
TEST(SimDevice, RefusesInsideACaptureWhatCudaStreamCaptureRefuses) {
  const Device sim = Device::sim(0);
  Stream stream(sim);
  Event event(sim), later(sim);
  event.record(&stream);
  later.record(&stream);
  const std::vector<std::pair<std::string, std::function<void()>>> refused = {
      {"cudaStreamSynchronize", [&] { stream.synchronize(); }},
      {"cudaEventSynchronize", [&] { event.synchronize(); }},
      {"cudaEventQuery", [&] { (void)event.query(); }},
      {"cudaEventElapsedTime", [&] { (void)event.elapsed_ms(later); }},
      {"on pinned host", [] { (void)Tensor::empty_pinned({1000}, DType::kF32); }},
      {"on sim:1, outside the graph's pool",
       [] { (void)Tensor::empty({1000}, DType::kF32, Device::sim(1)); }},
  };
  for (const auto& [call, work] : refused) {
    Graph graph(sim);
    EXPECT_THAT([&] { graph.capture(work); },
                ::testing::ThrowsMessage<GraphCaptureError>(
                    AllOf(HasSubstr(call), HasSubstr("inside a graph capture on sim:0"))))
        << call;
    EXPECT_NO_THROW(work()) << call << ", outside a capture";
  }
  Graph graph(sim);
  EXPECT_NO_THROW(graph.capture([] { (void)Tensor::empty({1000}, DType::kF32, Device::sim(0)); }))
      << "the captured device's own allocation, from the graph's pool";
}

}  // namespace
}  // namespace course
