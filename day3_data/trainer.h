// The day-3 training run behind `bazel run //day3_data:lab`: the day-1 network and schedule on
// augmented data, read from any storage format in its epoch order (WebDataset's for tar shards
// grouped by the trainee's TP3.4, TP3.5's quasi-random pages for packed files). Per image in the
// loader's workers: RandomResizedCrop (--augment), the flip, the jitter and the automatic policy;
// per batch, on the host before the copy or on the training device (--aug-device): the flip and
// jitter, then MixUp / CutMix with the trainee's cut and targets (TP3.1, TP3.2) and the soft-target
// loss's gradient (TP3.3). The optimizer and schedule are flags, for the optimizer comparison.
// On several ranks each trains a replica on its span of every epoch's order (the storage's
// locality kept: epoch_order.h's rank_span), gradients averaged by DDP.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common/parallel/comm/communicator.h"
#include "common/train/chronometer.h"
#include "day3_data/options.h"

namespace day3 {

struct LabResult {
  int64_t steps = 0;
  int64_t steps_per_epoch = 0;
  float last_loss = 0;
  std::optional<double> test_accuracy;  // after the last epoch (not with --test)
  bool ended_early = false;             // the epoch hook said to stop
  course::train::ChronometerReport timing;
};

// What a tool running the lab can watch or replace; each is optional.
struct RunHooks {
  // After each epoch (from 1) with its test accuracy: false stops the run there (the
  // hyper-parameter search's pruner).
  std::function<bool(int64_t epoch, double test_accuracy)> after_epoch;
  // The learning rate of each step (from 0), instead of --schedule's (the learning-rate finder).
  std::function<float(int64_t step)> lr_at;
  // After each step (from 1) with its training loss.
  std::function<void(int64_t step, float loss)> after_step;
};

// Runs the lab and prints its report on stdout (progress on stderr): on `comm`'s ranks (the
// job's under mpirun or srun), or without one in this process alone (the tools that run the lab
// trial after trial).
LabResult run_lab(const LabOptions& options, const RunHooks& hooks = {},
                  const std::shared_ptr<course::parallel::Communicator>& comm = nullptr);

}  // namespace day3
