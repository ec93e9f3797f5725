// Profiler: named ranges written as a Chrome-trace JSON file (open it in Perfetto or
// chrome://tracing), and pushed as NVTX ranges when built with CUDA so Nsight Systems shows
// the same names. Ranges nest; on a GPU each range end synchronises, so the spans include the
// GPU work they launched (profiling changes timing, as it does in the course).
#pragma once

#include <chrono>
#include <string>
#include <vector>

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
  // Writes {"traceEvents": [...]} to `path` (atomically).
  void write(const std::string& path) const;

 private:
  struct Event {
    std::string name;
    double start_us, duration_us;
  };
  Device device_;
  bool enabled_;
  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> events_;
};

}  // namespace course::train
