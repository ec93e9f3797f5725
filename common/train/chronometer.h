// The course's chronometer: per-step times of the load, forward, backward and optimizer
// phases, the first step excluded (it pays for allocation and library set-up), samples (images,
// or tokens for a language model) per second, and the device's "max memory allocated".
// Phases are marked with events on the device's stream and read later: a step never waits for
// the device; collect() (the training loop calls it every --log-every steps) waits once for the
// last step's end and adds up every step since.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/core/step_phase.h"
#include "common/tensor/device_timer.h"

namespace course::train {

using course::kPhases;  // the phases of common/core/step_phase.h, the training loop's
using course::Phase;
using course::phase_name;

struct ChronometerReport {
  int64_t steps = 0;                      // timed steps (after the first)
  std::array<double, kPhases> mean_ms{};  // per phase, per step
  std::array<bool, kPhases> timed{};      // phases that took part (the table shows those)
  double step_ms = 0;                     // sum of the phases
  double images_per_second = 0;           // batch / (forward + backward + optimizer)
  double total_images_per_second = 0;     // batch / step, loading and augmentation included
  int64_t max_memory_allocated = 0;       // bytes, on the training device
  std::string unit = "images";            // what the batch sizes count
  // With flops_per_unit > 0 the summary adds the model's TFLOP/s and MFU (model_flops.h) at
  // images_per_second over `devices` devices of `device_model`.
  double flops_per_unit = 0;
  int devices = 1;
  std::string device_model;

  std::string table() const;  // the printed summary
  // DeepSpeed's wall_clock_breakdown line: each timed phase's mean over the steps since
  // `earlier` (a report of the same chronometer), "time (ms) | forward: 3.41 | ...".
  std::string breakdown_since(const ChronometerReport& earlier) const;
};

class Chronometer {
 public:
  // `flops_per_unit` > 0: the model's training FLOPs per unit over `devices` devices, for the
  // report's TFLOP/s and MFU (model_flops.h).
  explicit Chronometer(Device device, std::string unit = "images", double flops_per_unit = 0,
                       int devices = 1);

  // The previous phase (if any) ends here. A phase may come back within a step (the load,
  // forward and backward of each micro-batch): its times add up.
  void start(Phase phase);
  void end_step(int64_t batch_size);  // ends the step's last phase; its times are read later
  void collect();                     // waits for the steps ended so far and adds up their phases
  ChronometerReport report();         // after collect()

 private:
  using Marks = std::vector<std::unique_ptr<Event>>;  // phase starts, then the step end
  struct EndedStep {
    Marks marks;
    std::vector<Phase> phases;
    int64_t batch_size;
  };
  // Gives the step's events back to the pool.
  void recycle(Marks& marks);

  Device device_;
  std::string unit_;
  double flops_per_unit_;
  int devices_;
  EventPool events_;                   // reused from step to step
  Marks marks_;                        // the current step's
  std::vector<Phase> sequence_;        // the phases started in the current step
  std::vector<EndedStep> ended_;       // timed steps not collected yet
  std::array<bool, kPhases> timed_{};  // in any timed step
  std::array<double, kPhases> total_ms_{};
  int64_t steps_seen_ = 0, images_ = 0;
};

}  // namespace course::train
