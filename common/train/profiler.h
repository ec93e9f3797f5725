// Profiler: named ranges written as a Chrome-trace JSON file (open it in Perfetto or
// chrome://tracing), and pushed as NVTX ranges when built with CUDA so Nsight Systems shows
// the same names. Ranges nest; on a GPU each range end synchronises, so the spans include the
// GPU work they launched (profiling changes timing, as it does in the course).
//
// While a range is recorded the profiler listens to the activity log, so the trace also shows
// the collectives launched meanwhile: each in flight as an asynchronous span, and each wait for
// one as a range nested in the phase that waited. On several ranks the trace holds every
// rank's events, one process row per rank, on a common clock.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/parallel/communicator.h"
#include "common/tensor/device.h"

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
    std::chrono::steady_clock::time_point start_;
  };

  // A range recorded when the profiler is enabled and `active` (e.g. the step is scheduled).
  Range range(std::string name, bool active = true) {
    return Range(*this, std::move(name), enabled_ && active);
  }
  bool enabled() const { return enabled_; }
  size_t event_count() const { return events_.size(); }
  // Writes {"traceEvents": [...]} to `path` (atomically). With `comm`, collective: every rank's
  // events go into the one file rank 0 writes.
  void write(const std::string& path, parallel::Communicator* comm = nullptr) const;

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

  Device device_;
  bool enabled_;
  std::chrono::steady_clock::time_point origin_;
  int64_t origin_unix_us_;  // the origin on the system clock, which all ranks share
  int open_ranges_ = 0;     // recorded ranges open now: the activity log is listened to
  std::vector<Event> events_;
};

}  // namespace course::train
