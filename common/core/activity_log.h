// Activity log: spans of work that run beside the timed code (collectives in flight, the waits
// for them), recorded only while a profiler listens, so its Chrome trace shows communication
// next to the compute phases. One log per process: the communicator records into it without
// knowing about profilers; the profiler listens during the steps it records and takes the spans.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace course {

struct ActivitySpan {
  std::string name;  // e.g. "all_gather 2.1 MiB"
  bool overlaps;     // true: may overlap other spans (in flight); false: nests in the caller's
  std::chrono::steady_clock::time_point start, end;
};

class ActivityLog {
 public:
  static ActivityLog& instance();

  void listen(bool on);
  bool listening() const { return listening_; }
  void add(ActivitySpan span);       // kept only while listening
  std::vector<ActivitySpan> take();  // the spans so far, removed from the log

 private:
  ActivityLog() = default;
  std::atomic<bool> listening_ = false;
  std::mutex mutex_;
  std::vector<ActivitySpan> spans_;
};

}  // namespace course
