// Event pools and summed intervals.
#include "common/tensor/device_timer.h"

#include "common/core/error.h"

namespace course {

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
  COURSE_CHECK(open_.empty() || open_.back().stop, "IntervalTimer::start() twice without stop()");
  add_finished(false);
  open_.push_back({stamp(pool_), nullptr});
}

void IntervalTimer::stop() {
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
