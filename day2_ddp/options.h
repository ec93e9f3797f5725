// The day-2 lab's command line: the shared training and DataLoader flags (with the course
// script's names and defaults) plus data parallelism and large-batch optimisation.
#pragma once

#include <cstdint>
#include <string>

#include "common/optim/make_optimizer.h"
#include "common/train/lab_flags.h"

namespace day2 {

struct LabOptions : course::train::TrainingFlags {
  int64_t global_batch_size = 0;  // > 0: split over the ranks (must divide); else batch x ranks
  std::string ddp = "buckets";    // "buckets" (TP2.3), "naive" (TP2.2)
  std::string allreduce = "mpi";  // "mpi" or "ring" (TP2.4)
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  bool overlap = true;
  bool find_unused_parameters = false;
  bool sync_bn = false;  // batch statistics over the global batch (SyncBatchNorm)
  course::optim::OptimizerKind optimizer = course::optim::OptimizerKind::kSgd;
  int64_t base_batch = 0;  // > 0: large-batch schedule (TP2.5) scaled from this batch
  double warmup_epochs = 0;
  int64_t metric_step = 100;  // training metrics synchronised and printed every this many steps
  double comm_timeout = 300;  // seconds before a missing rank makes the others fail
};

LabOptions parse_options(int argc, char** argv);

// Checks what flags alone cannot, given the number of ranks (throws course::Error).
void validate(const LabOptions& options, int world_size);

}  // namespace day2
