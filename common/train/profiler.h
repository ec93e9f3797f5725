// Profiler: named ranges written as a Chrome-trace JSON file (open it in Perfetto or
// chrome://tracing), and pushed as NVTX ranges when built with CUDA so Nsight Systems shows
// the same names. Ranges nest. A range is timed by the device (common/tensor/device_timer.h:
// events on the compute stream, read when the trace is written), so on a GPU it spans the work
// it launched as the GPU ran it, and profiling makes the host wait for nothing in the steps.
//
// While a range is recorded the profiler listens to the activity log, so the trace also shows
// the collectives launched meanwhile: each in flight as an asynchronous span, and each wait for
// one as a range nested in the phase that waited. On several ranks the trace holds every
// rank's events, one process row per rank, on a common clock.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/parallel/comm/communicator.h"
#include "common/tensor/device.h"
#include "common/tensor/device_timer.h"

namespace course::train {

class Profiler {
 public:
  explicit Profiler(Device device, bool enabled = true);

  class Range {
   public:
    Range(Profiler& profiler, std::string name, bool active);
    ~Range();
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;

   private:
    Profiler& profiler_;
    std::string name_;
    bool active_;
    std::unique_ptr<course::Event> start_;
  };

  // A range recorded when the profiler is enabled and `active` (e.g. the step is scheduled).
  Range range(std::string name, bool active = true) {
    return Range(*this, std::move(name), enabled_ && active);
  }
  bool enabled() const { return enabled_; }
  size_t event_count() const { return events_.size() + unread_.size(); }
  // Writes {"traceEvents": [...]} to `path` (atomically), after reading the ranges' device times
  // (a host wait). With `comm`, collective: every rank's events go into the one file rank 0
  // writes.
  void write(const std::string& path, parallel::Communicator* comm = nullptr);

 private:
  struct Event {
    std::string name;
    double start_us, duration_us;
    bool overlaps;  // an asynchronous span (a collective in flight), not a nested range
  };
  // This rank's events as a JSON array's text, process `pid`, times shifted by `shift_us`.
  std::string events_json(int pid, double shift_us) const;
  void add(const std::string& name, std::chrono::steady_clock::time_point start,
           std::chrono::steady_clock::time_point end, bool overlaps);
  // The ranges' events turned into times since the origin.
  void read_ranges();

  // A range whose device times are not read yet.
  struct UnreadRange {
    std::string name;
    std::unique_ptr<course::Event> start, end;
  };

  Device device_;
  bool enabled_;
  EventPool device_events_;
  std::unique_ptr<course::Event> device_origin_;  // recorded with origin_, when enabled
  std::vector<UnreadRange> unread_;
  std::chrono::steady_clock::time_point origin_;
  int64_t origin_unix_us_;  // the origin on the system clock, which all ranks share
  int open_ranges_ = 0;     // recorded ranges open now: the activity log is listened to
  std::vector<Event> events_;
};

}  // namespace course::train
