// The day-1 lab's wiring on the shared training loop (common/train/training_loop.h): data,
// model, SGD with the one-cycle schedule, and the step with the trainee's exercises in it
// (device placement TP1.1, loss scaling TP1.2, channels-last TP1.3, the profiler's schedule
// TP1.4, the model's memory TP1.5) and the optional captured graph.
#include "day1_gpu/trainer.h"

#include <cstdio>
#include <optional>

#include "common/core/format.h"
#include "common/core/launch_rank.h"
#include "common/data/device_batches.h"
#include "common/data/distributed_sampler.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/train/classifier_run.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/gradient_accumulation.h"
#include "common/train/loss_scaling.h"
#include "common/train/step_graph.h"
#include "common/train/training_loop.h"
#include "day1_gpu/exercises.h"

namespace day1 {

using namespace course;

namespace {

// With --device cuda, TP1.1 moves batches to the GPU; a GPU chosen by default gets the course's
// copy; on the CPU they stay where the loader made them.
DeviceBatches::Transfer batch_transfer(const LabOptions& o, Device device) {
  if (copies_with_to_device(o)) return to_device;
  if (!device.is_cpu()) return copy_to_device;
  return {};
}

// The day-1 step after loading: the forward and backward passes of its micro-batches (one
// without --accumulate; scaled by TP1.2's loss scaler in f16), the clip (--clip-grad-norm) and
// the update; with --cuda-graphs, after one eager step, the whole step replayed as one graph.
class LabStep {
 public:
  LabStep(train::ClassifierRun& run, const LabOptions& o)
      : run_(run), o_(o), graph_(o.cuda_graphs ? captured_step(run.device) : std::nullopt) {}

  // Returns the batch's mean loss, a (1,) tensor on the device.
  Tensor run(const Batch& batch, train::StepPhases& phases) {
    if (graph_ && eager_step_done_ && graph_->fits(batch.images, batch.labels)) {
      phases.start(train::Phase::kGraphReplay);
      if (graph_->captured()) phases.note_replayed();
      run_.optimizer->prepare_step();
      const Tensor loss = graph_->run(batch.images, batch.labels);
      run_.optimizer->count_step();
      return loss;
    }
    const Tensor loss = passes(batch, [&phases](train::Phase phase) { phases.start(phase); });
    phases.start(train::Phase::kOptimizer);
    run_.clipping.apply_to_whole(run_.params, run_.loss_scale());
    update();
    eager_step_done_ = true;
    return loss;
  }

 private:
  // The update after the passes: TP1.2's scaled step in f16 (skipped on the device after an
  // overflow), the optimizer's step otherwise; inside a capture, the update alone (the replay's
  // caller prepares and counts the optimizer's step).
  void update() {
    if (run_.scaler) {
      scaled_optimizer_step(*run_.scaler, *run_.optimizer, run_.params);
    } else {
      run_.optimizer->step();
    }
  }

  // The step replayed under --cuda-graphs: the passes of one micro-batch and the update. Made in
  // the member initialisers, not emplaced afterwards: GCC 12 then sees no engaged optional to
  // destroy before construction (its -Wmaybe-uninitialized false positive under the sanitizers).
  std::optional<train::StepGraph> captured_step(Device device) {
    return std::optional<train::StepGraph>(
        std::in_place, device, [this](const Tensor& images, const Tensor& labels) {
          const Tensor loss = passes({images, labels}, [](train::Phase) {});
          update();
          return loss;
        });
  }

  // Forward and backward of each micro-batch, the gradients accumulated.
  Tensor passes(const Batch& batch, const std::function<void(Phase)>& mark) {
    const Tensor scale = run_.loss_scale();
    return train::accumulate_gradients(
        *run_.model, batch, o_.accumulate, [&](const train::MicroBatch& m) {
          mark(train::Phase::kForward);
          const train::ClassifierForward f = train::classifier_forward(*run_.model, m.batch, o_);
          mark(train::Phase::kBackward);
          train::classifier_backward(*run_.model, f, m.batch.labels, o_, m.share, scale);
          return f.loss.loss;
        });
  }

  train::ClassifierRun& run_;  // the model, its parameters, optimizer, clipping and scaler
  const LabOptions& o_;
  std::optional<train::StepGraph> graph_;
  bool eager_step_done_ = false;
};

void print_run_header(const LabOptions& o, Device device, int64_t samples, int64_t steps_per_epoch,
                      const std::vector<nn::Parameter*>& params, optim::Optimizer& optimizer) {
  std::printf("training %s on %s: %lld images of %lldx%lld, batch %s, %lld steps per epoch%s%s\n",
              o.model.c_str(), device.str().c_str(), static_cast<long long>(samples),
              static_cast<long long>(o.image_size), static_cast<long long>(o.image_size),
              train::describe_step_batch(o.batch_size, o.accumulate).c_str(),
              static_cast<long long>(steps_per_epoch),
              o.amp ? (", " + train::precision_name(o)).c_str() : "",
              o.channels_last ? ", channels-last" : "");
  if (o.model_memory) {
    std::printf("model memory (parameters, gradients, optimizer state): %s\n",
                format_bytes(model_memory_bytes(params, optimizer)).c_str());
  }
  std::fflush(stdout);
}

// The lab's device, made the process's (before the dataset's pinned buffers, in every thread),
// with its memory limit; what --cuda-graphs becomes without a GPU is said.
Device set_up_device(const LabOptions& o) {
  const Device device = named_or_default_device(o.device);
  set_process_device(device);
  if (o.max_memory_mb > 0) device_allocator(device).set_limit(o.max_memory_mb << 20);
  if (o.cuda_graphs) train::note_graph_stand_in(device);
  return device;
}

LabResult lab_result(const train::LoopResult& run, const train::ClassifierRun& classifier) {
  train::print_loss_scaling(classifier.scaler.get(), true);
  LabResult result{.steps = run.steps,
                   .skipped_steps = classifier.scaler ? classifier.scaler->skipped_steps() : 0,
                   .last_loss = run.last_loss,
                   .test_accuracy = run.test_accuracy,
                   .timing = run.timing,
                   .step_waits = run.step_waits,
                   .read_waits = run.read_waits};
  for (nn::Parameter* p : classifier.params)
    result.parameters.push_back(p->value.to_vector<float>());
  return result;
}

}  // namespace

LabResult run_lab(const LabOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const Device device = set_up_device(o);

  const LabDatasets data = open_dataset(o);
  const int64_t step_batch = o.batch_size * o.accumulate;  // --accumulate's micro-batches
  DataLoader loader(data.train, data.train_transform, loader_options(o, step_batch));
  const SamplerOptions sampler{.dataset_size = data.train->size(), .seed = o.seed};
  const int64_t samples = data.train->size();
  const int64_t steps_per_epoch = batches_per_epoch(samples, step_batch, o.drop_last);
  train::check_micro_batches(samples, step_batch, o.accumulate, o.drop_last);
  DeviceBatches batches(loader, device, o.non_blocking, batch_transfer(o, device));
  const auto place = [&](const Batch& host) {
    Batch b = batches.place(host);
    if (o.channels_last) b.images = to_channels_last(b.images);
    return b;
  };

  train::ClassifierRun run(o, optim::OptimizerKind::kSgd, *data.train, device);
  const std::shared_ptr<const optim::Schedule> schedule =
      optim::one_cycle_schedule(o.lr, o.epochs * steps_per_epoch);
  LabStep lab_step(run, o);
  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    batches.start_epoch(distributed_sample(sampler, 0, 1, epoch), epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    Batch batch = batches.next();
    if (o.channels_last) batch.images = to_channels_last(batch.images);
    return lab_step.run(batch, phases);
  };
  hooks.validate = [&] {
    return train::evaluate(*run.model, data.val, data.val_transform, o, 0, 1, place);
  };
  hooks.profiled = [](int64_t step) { return record_step(step, {}); };
  train::LoopConfig config = run.loop_config(data.train->channels());
  config.lr_at = [&](int64_t step) { return schedule->lr_at(step); };
  config.steps_per_epoch = steps_per_epoch;
  config.global_batch = step_batch;
  train::TrainingLoop loop(o, config, hooks);

  print_run_header(o, device, samples, steps_per_epoch, run.params, *run.optimizer);

  return lab_result(loop.run(), run);
}

}  // namespace day1
