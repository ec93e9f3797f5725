// Command line of the day-2 lab.
#include "day2_ddp/options.h"

#include <CLI/CLI.hpp>

#include "common/core/named_choices.h"
#include "common/optim/make_optimizer.h"

namespace day2 {

const char* gradient_sync_name(GradientSync sync) {
  return sync == GradientSync::kBuckets ? "buckets" : "naive";
}

const char* bucket_reduction_name(BucketReduction reduction) {
  return reduction == BucketReduction::kMpi ? "mpi" : "ring";
}

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 2: feed the GPU, then use many of them: DataLoader tuning (TP2.1), data parallelism "
      "(TP2.2-TP2.4) and large batches (TP2.5). Run under mpirun or srun for several ranks.");
  course::train::add_training_flags(app, o);
  course::train::add_step_flags(app, o);
  app.add_option("--global-batch-size", o.global_batch_size,
                 "images per forward pass over all ranks, instead of --batch-size per rank (a "
                 "step of --accumulate K holds K of them)");
  course::train::add_choice(
      app, "--ddp", o.ddp,
      course::named_choices({GradientSync::kBuckets, GradientSync::kNaive}, gradient_sync_name),
      "gradient synchronisation");
  course::train::add_choice(
      app, "--allreduce", o.allreduce,
      course::named_choices({BucketReduction::kMpi, BucketReduction::kRing}, bucket_reduction_name),
      "bucket all-reduce: MPI's or the ring of TP2.4");
  app.add_option("--bucket-cap-mb", o.bucket_cap_mb, "DDP bucket size")->capture_default_str();
  app.add_option("--first-bucket-mb", o.first_bucket_mb)->capture_default_str();
  course::train::add_switch(app, "overlap", o.overlap,
                            "all-reduce buckets during the backward pass");
  app.add_flag("--find-unused-parameters", o.find_unused_parameters,
               "reduce zeros for parameters without a gradient");
  app.add_flag("--sync-bn", o.sync_bn, "batch norm statistics over all ranks (SyncBatchNorm)");
  course::train::add_choice(app, "--optimizer", o.optimizer,
                            course::optim::optimizer_choices(false),
                            "the optimizer (its own defaults for the rest)");
  app.add_option("--base-batch", o.base_batch,
                 "large-batch schedule (TP2.5): --lr is for this global batch");
  app.add_option("--warmup-epochs", o.warmup_epochs, "warm-up of the large-batch schedule")
      ->capture_default_str();
  app.add_option("--metric-step", o.metric_step, "steps between synchronised training metrics")
      ->capture_default_str();
  app.add_option("--comm-timeout", o.comm_timeout, "seconds to wait for the other ranks")
      ->capture_default_str();
  course::train::parse_or_exit(app, argc, argv);
  return o;
}

void validate(const LabOptions& o, int world_size) {
  course::train::validate_training_flags(o);
  COURSE_CHECK(o.global_batch_size >= 0, "--global-batch-size must not be negative");
  COURSE_CHECK(o.global_batch_size % world_size == 0, "--global-batch-size ", o.global_batch_size,
               " does not divide over ", world_size, " ranks");
  COURSE_CHECK(o.bucket_cap_mb > 0 && o.first_bucket_mb > 0, "bucket sizes must be positive");
  COURSE_CHECK(o.base_batch >= 0 && o.warmup_epochs >= 0,
               "--base-batch and --warmup-epochs must not be negative");
  COURSE_CHECK(o.metric_step > 0, "--metric-step must be positive");
  COURSE_CHECK(o.comm_timeout > 0, "--comm-timeout must be positive");
}

}  // namespace day2
