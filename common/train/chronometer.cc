// The chronometer.
#include "common/train/chronometer.h"

#include <cstdio>

#include "common/core/format.h"
#include "common/tensor/allocator.h"
#include "common/train/model_flops.h"

namespace course::train {

Chronometer::Chronometer(Device device, std::string unit, double flops_per_unit, int devices)
    : device_(device),
      unit_(std::move(unit)),
      flops_per_unit_(flops_per_unit),
      devices_(devices),
      events_(device) {
  device_allocator(device).reset_peak();
}

void Chronometer::recycle(Marks& marks) {
  for (std::unique_ptr<Event>& event : marks) events_.give(std::move(event));
  marks.clear();
}

void Chronometer::start(Phase phase) {
  marks_.push_back(stamp(events_));
  sequence_.push_back(phase);
}

void Chronometer::end_step(int64_t batch_size) {
  marks_.push_back(stamp(events_));
  // The first step pays for allocation and library set-up: it is not timed.
  if (steps_seen_++ > 0) {
    ended_.push_back({std::move(marks_), std::move(sequence_), batch_size});
  }
  recycle(marks_);
  sequence_.clear();
}

void Chronometer::collect() {
  if (ended_.empty()) return;
  ended_.back().marks[ended_.back().phases.size()]->synchronize();
  for (EndedStep& step : ended_) {
    // Each phase ends where the next one starts (or at the step end).
    for (size_t i = 0; i < step.phases.size(); ++i) {
      const int p = static_cast<int>(step.phases[i]);
      total_ms_[p] += step.marks[i]->elapsed_ms(*step.marks[i + 1]);
      timed_[p] = true;
    }
    images_ += step.batch_size;
    recycle(step.marks);
  }
  ended_.clear();
}

ChronometerReport Chronometer::report() {
  collect();
  ChronometerReport r;
  r.unit = unit_;
  r.flops_per_unit = flops_per_unit_;
  r.devices = devices_;
  if (flops_per_unit_ > 0) r.device_model = device_model(device_);
  r.steps = steps_seen_ > 0 ? steps_seen_ - 1 : 0;
  r.max_memory_allocated = device_allocator(device_).stats().peak_allocated;
  if (r.steps == 0) return r;
  double compute_ms = 0;
  for (int p = 0; p < kPhases; ++p) {
    r.mean_ms[p] = total_ms_[p] / static_cast<double>(r.steps);
    r.timed[p] = timed_[p];
    r.step_ms += r.mean_ms[p];
    if (p != static_cast<int>(Phase::kLoad) && p != static_cast<int>(Phase::kAugment)) {
      compute_ms += r.mean_ms[p];
    }
  }
  const double images_per_step = static_cast<double>(images_) / static_cast<double>(r.steps);
  r.images_per_second = compute_ms > 0 ? images_per_step * 1000.0 / compute_ms : 0;
  r.total_images_per_second = r.step_ms > 0 ? images_per_step * 1000.0 / r.step_ms : 0;
  return r;
}

std::string ChronometerReport::breakdown_since(const ChronometerReport& earlier) const {
  const double steps_between = static_cast<double>(steps - earlier.steps);
  std::string out = "time (ms) over " + std::to_string(steps - earlier.steps) + " step(s)";
  char part[96];
  for (int p = 0; p < kPhases; ++p) {
    if (!timed[p] || steps_between <= 0) continue;
    const double sum = mean_ms[p] * static_cast<double>(steps) -
                       earlier.mean_ms[p] * static_cast<double>(earlier.steps);
    std::snprintf(part, sizeof part, " | %s: %.2f", phase_name(static_cast<Phase>(p)),
                  sum / steps_between);
    out += part;
  }
  return out;
}

std::string ChronometerReport::table() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %10s %7s\n", "phase (per step)", "time", "share");
  out += line;
  for (int p = 0; p < kPhases; ++p) {
    if (!timed[p]) continue;
    std::snprintf(line, sizeof line, "%-22s %7.2f ms %6.1f%%\n", phase_name(static_cast<Phase>(p)),
                  mean_ms[p], step_ms > 0 ? 100.0 * mean_ms[p] / step_ms : 0.0);
    out += line;
  }
  const char* augmented = timed[static_cast<int>(Phase::kAugment)] ? " and augmentation" : "";
  std::snprintf(line, sizeof line,
                "%-22s %7.2f ms (%lld steps timed, the first excluded)\n"
                "training performance   %.1f %s/s (loading%s excluded)\n"
                "total performance      %.1f %s/s (loading%s included)\n"
                "max memory allocated   %s\n",
                "step", step_ms, static_cast<long long>(steps), images_per_second, unit.c_str(),
                augmented, total_images_per_second, unit.c_str(), augmented,
                format_bytes(max_memory_allocated).c_str());
  out += line;
  if (flops_per_unit > 0 && images_per_second > 0) {
    out += model_flops_line(images_per_second, flops_per_unit, devices, device_model);
  }
  return out;
}

}  // namespace course::train
