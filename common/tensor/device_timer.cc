// Event pools and summed intervals.
#include "common/tensor/device_timer.h"

#include <cstdio>
#include <mutex>

#include "common/core/error.h"
#include "common/core/launch_rank.h"
#include "common/tensor/capture.h"

namespace course {

namespace {

// Whether a timer stands aside: while this thread captures a graph, whose replays a host-side
// timer cannot follow interval by interval, and whose capture its event queries would end. Said
// once a process (by rank 0 of a job): the captured steps' own time is still measured.
bool stands_aside() {
  if (!capturing()) return false;
  static std::once_flag said;
  std::call_once(said, [] {
    if (!prints_shared_messages()) return;
    std::fprintf(stderr,
                 "note: the device timers inside the captured step stand aside (a graph's "
                 "replays are timed as whole steps, not interval by interval)\n");
  });
  return true;
}

}  // namespace

std::unique_ptr<Event> EventPool::take() {
  if (free_.empty()) return std::make_unique<Event>(device_);
  std::unique_ptr<Event> event = std::move(free_.back());
  free_.pop_back();
  return event;
}

std::unique_ptr<Event> stamp(EventPool& pool) {
  std::unique_ptr<Event> event = pool.take();
  event->record();
  return event;
}

void IntervalTimer::start() {
  if (stands_aside()) return;
  COURSE_CHECK(open_.empty() || open_.back().stop, "IntervalTimer::start() twice without stop()");
  add_finished(false);
  open_.push_back({stamp(pool_), nullptr});
}

void IntervalTimer::stop() {
  if (stands_aside()) return;
  COURSE_CHECK(!open_.empty() && !open_.back().stop, "IntervalTimer::stop() without start()");
  open_.back().stop = stamp(pool_);
}

double IntervalTimer::total_seconds() {
  add_finished(true);
  return total_;
}

void IntervalTimer::add_finished(bool wait) {
  while (!open_.empty() && open_.front().stop && (wait || open_.front().stop->query())) {
    Interval& done = open_.front();
    total_ += done.start->elapsed_ms(*done.stop) / 1000.0;
    pool_.give(std::move(done.start));
    pool_.give(std::move(done.stop));
    open_.pop_front();
  }
}

}  // namespace course
