// The device timer: intervals of device time, read once the device has reached their ends. On
// the simulated accelerator (whose events, like the CPU's, are clock readings) timing a step's
// pieces never makes the host wait, only the summary's read does, and time between intervals is
// charged to none of them; inside a graph capture it stands aside.
#include "common/tensor/device_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/core/error.h"
#include "common/tensor/graph.h"
#include "common/tensor/host_waits.h"

namespace course {
namespace {

using std::chrono::milliseconds;

TEST(IntervalTimer, ChargesItsIntervalsOnlyWithoutAHostWaitUntilTheSummary) {
  IntervalTimer timer(Device::sim(0));
  const auto begin = std::chrono::steady_clock::now();
  const HostWaits before = host_waits();
  for (int i = 0; i < 3; ++i) {
    timer.start();
    std::this_thread::sleep_for(milliseconds(10));
    timer.stop();
    std::this_thread::sleep_for(milliseconds(30));  // between intervals: charged to none
  }
  EXPECT_EQ(host_waits() - before, HostWaits{}) << "marking an interval waited for the device";
  const double loop =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const double total = timer.total_seconds();
  EXPECT_GE(total, 0.030);
  EXPECT_LE(total, loop - 0.090);
  EXPECT_EQ(timer.total_seconds(), total) << "a second read adds nothing";
}

TEST(IntervalTimer, RefusesUnpairedMarks) {
  IntervalTimer timer(Device::cpu());
  EXPECT_THROW(timer.stop(), Error);
  timer.start();
  EXPECT_THROW(timer.start(), Error);
  timer.stop();
  EXPECT_GE(timer.total_seconds(), 0.0);
}

// Inside a graph capture the timer stands aside: a timer that queried its open intervals there
// (as add_finished does at each start) would end the capture on a GPU, and the simulated
// accelerator refuses the query. The replays add nothing; the intervals outside are kept.
TEST(IntervalTimer, StandsAsideInsideACapture) {
  const Device sim = Device::sim(0);
  IntervalTimer timer(sim);
  timer.start();
  std::this_thread::sleep_for(milliseconds(20));
  timer.stop();
  Graph graph(sim);
  EXPECT_NO_THROW(graph.capture([&] {
    for (int i = 0; i < 2; ++i) {
      timer.start();
      std::this_thread::sleep_for(milliseconds(100));
      timer.stop();
    }
  }));
  graph.replay();
  const double total = timer.total_seconds();
  EXPECT_GE(total, 0.020);
  EXPECT_LT(total, 0.150) << "the captured intervals were timed";
}

TEST(EventPool, ReusesTheEventsGivenBack) {
  EventPool pool(Device::sim(1));
  std::unique_ptr<Event> first = stamp(pool);
  Event* address = first.get();
  EXPECT_EQ(first->device(), Device::sim(1));
  pool.give(std::move(first));
  EXPECT_EQ(pool.take().get(), address);
}

}  // namespace
}  // namespace course
