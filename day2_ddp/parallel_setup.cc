// Gradient synchronisation and learning rate from the day-2 flags.
#include "day2_ddp/parallel_setup.h"

#include "common/optim/schedule.h"
#include "day2_ddp/exercises.h"

namespace day2 {

std::unique_ptr<parallel::DistributedDataParallel> make_ddp(
    const LabOptions& o, nn::Module& model, const std::shared_ptr<parallel::Communicator>& comm) {
  if (o.ddp == GradientSync::kNaive) {
    parallel::broadcast_state(model, *comm);
    return nullptr;
  }
  const std::vector<int64_t> bytes = parallel::gradient_bytes(model);
  parallel::BucketAllreduce reduce;
  if (o.allreduce == BucketReduction::kRing) {
    reduce = [comm](Tensor& bucket) {
      ring_allreduce(bucket, *comm);
      return parallel::completed_work();
    };
  }
  return std::make_unique<parallel::DistributedDataParallel>(
      model, comm,
      plan_buckets(bytes, static_cast<int64_t>(o.bucket_cap_mb * (1 << 20)),
                   static_cast<int64_t>(o.first_bucket_mb * (1 << 20))),
      parallel::DdpOptions{.overlap = o.overlap,
                           .find_unused_parameters = o.find_unused_parameters},
      reduce);
}

std::function<float(int64_t)> learning_rate(const LabOptions& o, int64_t steps_per_epoch,
                                            int64_t global_batch) {
  const int64_t total_steps = o.epochs * steps_per_epoch;
  if (o.base_batch > 0) {
    const LargeBatchSchedule schedule{
        .base_lr = o.lr,
        .base_batch = o.base_batch,
        .global_batch = global_batch,
        .warmup_steps = static_cast<int64_t>(o.warmup_epochs * steps_per_epoch),
        .total_steps = total_steps};
    return [schedule](int64_t step) { return large_batch_lr(step, schedule); };
  }
  std::shared_ptr<const course::optim::Schedule> one_cycle =
      course::optim::one_cycle_schedule(o.lr, total_steps);
  return [one_cycle](int64_t step) { return one_cycle->lr_at(step); };
}

}  // namespace day2
