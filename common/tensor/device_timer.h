// The course's timer of device work: intervals marked by events on the compute stream and read
// once the device has reached them, so timing never makes the host wait inside a step. On a GPU
// an event's time is the device's (when its stream got there), not when the host queued the work
// or got back from a call that returned at once (an all-reduce whose wait is stream-ordered); on
// the CPU and the simulated accelerator, whose work is done when queued, it is the clock. Day 2's
// exposed synchronisation, ZeRO's and FSDP's gather waits, the model-parallel replicas' averaging
// and the pipeline's actions (its bubble and --timeline) are measured with it, as the
// chronometer's phases are with the same events (common/train/chronometer.h).
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "common/tensor/stream.h"

namespace course {

// Events of one device, recycled: take() one to record, give() it back once read.
class EventPool {
 public:
  explicit EventPool(Device device) : device_(device) {}
  std::unique_ptr<Event> take();
  void give(std::unique_ptr<Event> event) { free_.push_back(std::move(event)); }
  Device device() const { return device_; }

 private:
  Device device_;
  std::vector<std::unique_ptr<Event>> free_;
};

// An event recorded now on the calling thread's compute stream, from `pool`.
std::unique_ptr<Event> stamp(EventPool& pool);

// Device time summed over intervals: start() and stop() around the work (or the wait) to time,
// total_seconds() when a summary is printed (it waits for the last interval's end). Intervals
// the device has finished are added up as new ones start, without waiting, so few stay open.
// Inside a graph capture start() and stop() stand aside (said once): the replays are not timed.
class IntervalTimer {
 public:
  explicit IntervalTimer(Device device) : pool_(device) {}
  void start();
  void stop();
  double total_seconds();

 private:
  void add_finished(bool wait);

  struct Interval {
    std::unique_ptr<Event> start, stop;
  };
  EventPool pool_;
  std::deque<Interval> open_;  // oldest first; the last may lack its stop
  double total_ = 0;
};

}  // namespace course
