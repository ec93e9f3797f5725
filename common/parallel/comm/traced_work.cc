// Recording a collective's flight and waits.
#include "common/parallel/comm/traced_work.h"

#include <chrono>
#include <utility>

#include "common/core/activity_log.h"
#include "common/core/format.h"

namespace course::parallel {

namespace {

using Clock = std::chrono::steady_clock;

class TracedWork : public Work {
 public:
  TracedWork(WorkPtr inner, std::string name)
      : inner_(std::move(inner)), name_(std::move(name)), launched_(Clock::now()) {}

  void wait() override {
    if (done_) return;
    const auto start = Clock::now();
    inner_->wait();
    ActivityLog::instance().add({"wait " + name_, false, start, Clock::now()});
    complete();
  }

  bool test() override {
    if (!done_ && inner_->test()) complete();
    return done_;
  }

 private:
  void complete() {
    done_ = true;
    ActivityLog::instance().add({name_, true, launched_, Clock::now()});
  }

  WorkPtr inner_;
  std::string name_;
  Clock::time_point launched_;
  bool done_ = false;
};

}  // namespace

WorkPtr traced(WorkPtr work, const std::string& op, int64_t bytes) {
  if (!ActivityLog::instance().listening()) return work;
  return std::make_shared<TracedWork>(std::move(work), op + " " + format_bytes(bytes));
}

}  // namespace course::parallel
