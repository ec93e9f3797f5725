// Chrome-trace profiler: the events of its ranges (profiler_range.cc) and of the activity log's
// collectives, written as one trace over the ranks.
#include "common/train/profiler.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/core/atomic_file.h"
#include "common/core/error.h"
#include "common/parallel/comm/gather_strings.h"

namespace course::train {

namespace {

using us = std::chrono::duration<double, std::micro>;

// Asynchronous spans are paired by id over the whole file: each rank numbers its own range.
constexpr int64_t kIdsPerRank = 1'000'000'000;

int64_t unix_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Profiler::Profiler(Device device, bool enabled)
    : device_(device),
      enabled_(enabled),
      device_events_(device),
      device_origin_(enabled ? stamp(device_events_) : nullptr),
      origin_(std::chrono::steady_clock::now()),
      origin_unix_us_(unix_now_us()) {}

void Profiler::read_ranges() {
  for (UnreadRange& r : unread_) {
    events_.push_back({r.name, 1e3 * device_origin_->elapsed_ms(*r.start),
                       1e3 * r.start->elapsed_ms(*r.end), false});
    device_events_.give(std::move(r.start));
    device_events_.give(std::move(r.end));
  }
  unread_.clear();
}

void Profiler::add(const std::string& name, std::chrono::steady_clock::time_point start,
                   std::chrono::steady_clock::time_point end, bool overlaps) {
  events_.push_back({name, us(start - origin_).count(), us(end - start).count(), overlaps});
}

std::string Profiler::events_json(int pid, double shift_us) const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"args", {{"name", "rank " + std::to_string(pid)}}}});
  int64_t next_id = 0;
  for (const Event& e : events_) {
    const nlohmann::json common = {
        {"name", e.name}, {"pid", pid}, {"tid", 0}, {"cat", e.overlaps ? "in flight" : "phase"}};
    if (!e.overlaps) {
      nlohmann::json complete = common;
      complete.update({{"ph", "X"}, {"ts", e.start_us + shift_us}, {"dur", e.duration_us}});
      events.push_back(complete);
      continue;
    }
    // An asynchronous span: Perfetto gives overlapping ones lanes of their own.
    for (const auto& [phase, ts] :
         {std::pair{"b", e.start_us}, std::pair{"e", e.start_us + e.duration_us}}) {
      nlohmann::json mark = common;
      mark.update({{"ph", phase}, {"ts", ts + shift_us}, {"id", pid * kIdsPerRank + next_id}});
      events.push_back(mark);
    }
    ++next_id;
  }
  return events.dump();
}

void Profiler::write(const std::string& path, parallel::Communicator* comm) {
  read_ranges();
  std::vector<std::string> ranks;
  if (!comm || comm->size() == 1) {
    ranks.push_back(events_json(0, 0));
  } else {
    // Times relative to the earliest rank's origin, on the system clock the ranks share.
    Tensor origin = Tensor::from_vector<int64_t>({origin_unix_us_}, {1});
    comm->allreduce(origin, parallel::ReduceOp::kMin)->wait();
    const double shift = static_cast<double>(origin_unix_us_ - origin.to_vector<int64_t>()[0]);
    ranks = parallel::all_gather_strings(events_json(comm->rank(), shift), *comm);
    if (comm->rank() != 0) return;
  }
  nlohmann::json events = nlohmann::json::array();
  for (const std::string& text : ranks) {
    for (auto& e : nlohmann::json::parse(text)) events.push_back(std::move(e));
  }
  write_file_atomically(
      path, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n",
      "the profiler trace");
}

}  // namespace course::train
