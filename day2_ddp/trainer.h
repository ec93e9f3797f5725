// The day-2 training run behind `bazel run //day2_ddp:lab` and `mpirun -np N .../lab`: every
// rank loads its share of each epoch through the DataLoader (TP2.1's sampler), trains a
// replica, and synchronises gradients naively (TP2.2) or in overlapped buckets (TP2.3) with
// MPI's or the ring all-reduce (TP2.4), under the one-cycle or the large-batch schedule
// (TP2.5). Rank 0 prints the report.
#pragma once

#include <optional>
#include <vector>

#include "common/train/chronometer.h"
#include "day2_ddp/options.h"

namespace day2 {

struct LabResult {
  int world_size = 1;
  int64_t global_batch = 0;
  int64_t steps = 0;
  float last_loss = 0;                  // mean over the ranks, last step
  std::optional<double> test_accuracy;  // over the whole validation set (not with --test)
  course::train::ChronometerReport timing;
  double first_batch_ms = 0;                   // waiting for the first batch of the first epoch
  double host_memory_peak_mib = 0;             // this process's peak resident memory
  int64_t sync_bytes_per_step = 0;             // gradient bytes all-reduced per step by each rank
  double exposed_sync_ms_per_step = 0;         // waiting for gradients after the backward pass
  std::vector<std::vector<float>> parameters;  // final values, in model order
};

LabResult run_lab(const LabOptions& options);

}  // namespace day2
