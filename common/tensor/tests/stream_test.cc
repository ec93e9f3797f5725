// Streams and events: on the CPU and the simulated accelerator an event is a clock reading, so
// the chronometers time every device with one code path; misuse is an error, and GPU streams skip
// without a GPU.
#include "common/tensor/stream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/core/error.h"
#include "common/testing/devices.h"

namespace course {
namespace {

using StreamTest = testing::DeviceTest;

TEST_P(StreamTest, EventsMeasureAtLeastTheTimeBetweenThem) {
  Stream stream(device());
  Event start(device()), stop(device());
  start.record(&stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.record(&stream);
  stop.synchronize();
  stream.synchronize();
  EXPECT_GE(start.elapsed_ms(stop), device().is_cuda() ? 0.0f : 19.0f);
  EXPECT_EQ(stream.handle() == nullptr, !device().is_cuda());
}

TEST_P(StreamTest, ElapsedTimeNeedsTwoRecordedEvents) {
  Event start(device()), stop(device());
  start.record();
  EXPECT_THROW(start.elapsed_ms(stop), Error);
}

COURSE_INSTANTIATE_DEVICE_TESTS(StreamTest);

TEST(Stream, AGpuStreamWithoutAGpuIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible here";
  EXPECT_THROW(Stream{Device::cuda(0)}, Error);
  EXPECT_THROW(Event{Device::cuda(0)}, Error);
}

}  // namespace
}  // namespace course
