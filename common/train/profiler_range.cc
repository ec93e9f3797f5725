// The profiler's ranges: device events at their ends, and an NVTX range too where CUDA is
// (Nsight Systems shows the same names). The only part of the profiler that sees CUDA.
#include "common/core/activity_log.h"
#include "common/train/profiler.h"

#if COURSE_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace course::train {

Profiler::Range::Range(Profiler& profiler, std::string name, bool active)
    : profiler_(profiler), name_(std::move(name)), active_(active) {
  if (!active_) return;
  start_ = stamp(profiler_.device_events_);
  if (profiler_.open_ranges_++ == 0) ActivityLog::instance().listen(true);
#if COURSE_WITH_CUDA
  if (profiler_.device_.is_cuda()) nvtxRangePushA(name_.c_str());
#endif
}

Profiler::Range::~Range() {
  if (!active_) return;
#if COURSE_WITH_CUDA
  if (profiler_.device_.is_cuda()) nvtxRangePop();
#endif
  profiler_.unread_.push_back({name_, std::move(start_), stamp(profiler_.device_events_)});
  if (--profiler_.open_ranges_ > 0) return;
  ActivityLog& log = ActivityLog::instance();
  log.listen(false);
  for (const ActivitySpan& span : log.take()) {
    profiler_.add(span.name, span.start, span.end, span.overlaps);
  }
}

}  // namespace course::train
