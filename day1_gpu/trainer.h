// The day-1 training run behind `bazel run //day1_gpu:lab`: data, model, SGD with the
// one-cycle schedule, the timed training loop (with the trainee's exercises in it),
// validation, checkpoints and the profiler.
#pragma once

#include <optional>
#include <vector>

#include "common/train/chronometer.h"
#include "day1_gpu/options.h"

namespace day1 {

struct LabResult {
  int64_t steps = 0;                    // optimizer steps taken by this run
  int64_t skipped_steps = 0;            // skipped by the loss scaler (f16)
  float last_loss = 0;                  // training loss of the last step
  std::optional<double> test_accuracy;  // after the last epoch (not with --test)
  course::train::ChronometerReport timing;
  course::HostWaits step_waits;  // the host's waits for the device in steps 2..N (loop's)
  course::HostWaits read_waits;  // and in the loss reads every --log-every steps
  std::vector<std::vector<float>> parameters;  // final values, in model order
};

// Runs the lab and prints its report on stdout (progress on stderr).
LabResult run_lab(const LabOptions& options);

}  // namespace day1
