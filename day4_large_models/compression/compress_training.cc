// The data and the training loop of Part 7's modes.
#include "day4_large_models/compression/compress_training.h"

#include "common/data/distributed_sampler.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/train/evaluate.h"
#include "common/train/training_loop.h"

namespace day4 {

using namespace course;

namespace {

DeviceBatches::Transfer transfer_to(Device device) {
  return device.is_cpu() ? DeviceBatches::Transfer{} : DeviceBatches::Transfer{copy_to_device};
}

}  // namespace

CompressData::CompressData(const train::TrainingFlags& flags, Device device)
    : flags_(flags),
      device_(device),
      data_(open_dataset(flags)),
      loader_(data_.train, data_.train_transform, loader_options(flags, flags.batch_size)),
      batches_(loader_, device, flags.non_blocking, transfer_to(device)) {}

Batch CompressData::place(const Batch& host) {
  return train::in_training_layout(batches_.place(host), flags_);
}

std::optional<double> train_on_loop(const train::TrainingFlags& o, CompressData& in,
                                    const TrainingRun& run) {
  const Dataset& train_set = *in.datasets().train;
  const SamplerOptions sampler{.dataset_size = train_set.size(), .seed = o.seed};
  const int64_t steps_per_epoch = batches_per_epoch(train_set.size(), o.batch_size, o.drop_last);
  const auto optimizer =
      optim::make_optimizer(train::optimizer_flags(o), run.model.state().parameters);
  const std::shared_ptr<const optim::Schedule> schedule =
      optim::one_cycle_schedule(o.lr, o.epochs * steps_per_epoch);

  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    in.batches().start_epoch(distributed_sample(sampler, 0, 1, epoch), epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    const Batch batch = train::in_training_layout(in.batches().next(), o);
    phases.start(train::Phase::kForward);
    run.model.zero_grad();
    const train::ClassifierForward f = train::classifier_forward(run.model, batch, o);
    Tensor loss = f.loss.loss;
    if (run.loss_and_backward) {
      loss = run.loss_and_backward(f, batch, phases);
    } else {
      phases.start(train::Phase::kBackward);
      train::classifier_backward(run.model, f, batch.labels, o);
    }
    phases.start(train::Phase::kOptimizer);
    optimizer->step();
    if (run.after_step) run.after_step();
    return loss;
  };
  hooks.validate = [&] {
    return train::evaluate(run.model, in.datasets().val, in.datasets().val_transform, o, 0, 1,
                           [&](const Batch& host) { return in.place(host); });
  };
  train::TrainingLoop loop(o,
                           {.device = in.device(),
                            .model = &run.model,
                            .optimizer = optimizer.get(),
                            .lr_at = [&](int64_t step) { return schedule->lr_at(step); },
                            .steps_per_epoch = steps_per_epoch,
                            .global_batch = o.batch_size,
                            .identity = run.identity,
                            .recipe = run.recipe},
                           hooks);
  return loop.run().test_accuracy;
}

void refuse_mixed_precision(const course::train::TrainingFlags& flags, const std::string& mode) {
  COURSE_CHECK(!flags.amp && flags.amp_dtype == course::DType::kBF16, "compress ", mode,
               " trains in f32: --amp and --amp-dtype do not apply");
}

}  // namespace day4
