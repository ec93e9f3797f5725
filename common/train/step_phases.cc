// Phases of a step in the chronometer and the profiler.
#include "common/train/step_phases.h"

namespace course::train {

StepPhases::StepPhases(Chronometer& chrono, Profiler& profiler, bool recorded)
    : chrono_(chrono), profiler_(profiler), recorded_(recorded) {}

void StepPhases::start(Phase phase) {
  range_.reset();
  chrono_.start(phase);
  range_.emplace(profiler_, phase_name(phase), profiler_.enabled() && recorded_);
}

void StepPhases::finish(int64_t batch_size) {
  range_.reset();
  chrono_.end_step(batch_size);
}

}  // namespace course::train
