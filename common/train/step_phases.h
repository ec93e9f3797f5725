// What a lab's training step uses to say where its time goes: each phase (load, forward,
// backward, optimizer, graph replay) starts a chronometer phase and, on profiled steps, a
// profiler range of the same name, so the printed table and the trace always agree.
#pragma once

#include <optional>

#include "common/train/chronometer.h"
#include "common/train/profiler.h"

namespace course::train {

class StepPhases {
 public:
  StepPhases(Chronometer& chrono, Profiler& profiler, bool recorded);
  // Ends the previous phase (if any) and starts `phase`.
  void start(Phase phase);
  // Ends the step's last phase; the step counted `batch_size` images.
  void finish(int64_t batch_size);
  bool recorded() const { return recorded_; }
  // The step ran as a replay of a graph captured in an earlier step: none of its host code ran
  // (its collectives were counted at the capture).
  void note_replayed() { replayed_ = true; }
  bool replayed() const { return replayed_; }

 private:
  Chronometer& chrono_;
  Profiler& profiler_;
  bool recorded_;
  bool replayed_ = false;
  std::optional<Profiler::Range> range_;
};

}  // namespace course::train
