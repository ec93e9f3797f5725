// The process's activity log.
#include "common/core/activity_log.h"

#include <utility>

namespace course {

ActivityLog& ActivityLog::instance() {
  static ActivityLog log;
  return log;
}

void ActivityLog::listen(bool on) {
  std::lock_guard lock(mutex_);
  listening_ = on;
}

void ActivityLog::add(ActivitySpan span) {
  std::lock_guard lock(mutex_);
  if (listening_) spans_.push_back(std::move(span));
}

std::vector<ActivitySpan> ActivityLog::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(spans_, {});
}

}  // namespace course
