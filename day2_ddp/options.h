// The day-2 lab's command line: the shared training and DataLoader flags (with the course
// script's names and defaults) plus data parallelism and large-batch optimisation.
#pragma once

#include <cstdint>
#include <string>

#include "common/optim/make_optimizer.h"
#include "common/train/lab_flags.h"

namespace day2 {

// --ddp: DDP's buckets overlapped with the backward (TP2.3), or the naive all-reduce of every
// gradient after it (TP2.2).
enum class GradientSync { kBuckets, kNaive };
const char* gradient_sync_name(GradientSync sync);
// --allreduce: how DDP's buckets are reduced, by MPI's all-reduce or by TP2.4's ring.
enum class BucketReduction { kMpi, kRing };
const char* bucket_reduction_name(BucketReduction reduction);

struct LabOptions : course::train::TrainingFlags {
  int64_t global_batch_size = 0;  // > 0: split over the ranks (must divide); else batch x ranks
  GradientSync ddp = GradientSync::kBuckets;
  BucketReduction allreduce = BucketReduction::kMpi;
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
