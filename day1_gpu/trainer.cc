// The day-1 lab's wiring on the shared training loop (common/train/training_loop.h): data,
// model, SGD with the one-cycle schedule, and the step with the trainee's exercises in it
// (device placement TP1.1, loss scaling TP1.2, channels-last TP1.3, the profiler's schedule
// TP1.4, the model's memory TP1.5) and the optional captured graph.
#include "day1_gpu/trainer.h"

#include <cstdio>
#include <optional>

#include "common/core/format.h"
#include "common/data/device_batches.h"
#include "common/data/distributed_sampler.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/step_graph.h"
#include "common/train/training_loop.h"
#include "day1_gpu/exercises.h"

namespace day1 {

using namespace course;

LabResult run_lab(const LabOptions& o) {
  validate(o);
  const Device device = o.device.empty() ? default_device() : parse_device(o.device);
  set_process_device(device);  // before the dataset's pinned buffers, in every thread
  if (o.max_memory_mb > 0) device_allocator(device).set_limit(o.max_memory_mb << 20);
  if (o.cuda_graphs && device.is_cpu()) {
    std::fprintf(stderr,
                 "--cuda-graphs: CUDA graphs need a GPU; on the CPU the step is recorded as a "
                 "task graph and replayed instead (the same code path, no launch overhead to "
                 "save)\n");
  }

  const LabDatasets data = open_dataset(o);
  DataLoader loader(data.train, data.train_transform, loader_options(o, o.batch_size));
  const SamplerOptions sampler{.dataset_size = data.train->size(), .seed = o.seed};
  const int64_t samples = data.train->size();
  const int64_t steps_per_epoch = batches_per_epoch(samples, o.batch_size, o.drop_last);
  // With --device cuda, TP1.1 moves batches to the GPU; a GPU chosen by default gets the course's
  // copy; on the CPU they stay where the loader made them.
  DeviceBatches::Transfer transfer;
  if (copies_with_to_device(o)) {
    transfer = to_device;
  } else if (!device.is_cpu()) {
    transfer = copy_to_device;
  }
  DeviceBatches batches(loader, device, o.non_blocking, transfer);
  const auto place = [&](const Batch& host) {
    Batch b = batches.place(host);
    if (o.channels_last) b.images = to_channels_last(b.images);
    return b;
  };

  const auto model = train::make_classifier(o, *data.train, device);
  const std::vector<nn::Parameter*> params = model->parameters();
  const auto optimizer = optim::make_optimizer(
      {.lr = o.lr, .momentum = o.mom, .weight_decay = o.wd}, model->state().parameters);
  const std::shared_ptr<const optim::Schedule> schedule =
      optim::one_cycle_schedule(o.lr, o.epochs * steps_per_epoch);
  optim::LossScaler scaler;
  const bool loss_scaling = o.amp && o.amp_dtype == DType::kF16;

  // --cuda-graphs: after one eager step, forward, backward and update replay as one graph.
  std::optional<train::StepGraph> graph;
  bool eager_step_done = false;
  if (o.cuda_graphs) {
    graph.emplace(device, [&](const Tensor& images, const Tensor& labels) {
      const train::ClassifierForward f = train::classifier_forward(*model, {images, labels}, o);
      train::classifier_backward(*model, f, labels, o);
      optimizer->update();
      return f.loss.loss;
    });
  }
  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    batches.start_epoch(distributed_sample(sampler, 0, 1, epoch), epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    Batch batch = batches.next();
    if (o.channels_last) batch.images = to_channels_last(batch.images);
    if (graph && eager_step_done && graph->fits(batch.images, batch.labels)) {
      phases.start(train::Phase::kGraphReplay);
      optimizer->prepare_step();
      const Tensor loss = graph->run(batch.images, batch.labels);
      optimizer->count_step();
      return loss;
    }
    phases.start(train::Phase::kForward);
    const train::ClassifierForward f = train::classifier_forward(*model, batch, o);
    phases.start(train::Phase::kBackward);
    train::classifier_backward(*model, f, batch.labels, o, loss_scaling ? scaler.scale() : 1.0f);
    phases.start(train::Phase::kOptimizer);
    if (loss_scaling) {
      scaled_optimizer_step(scaler, *optimizer, params);
    } else {
      optimizer->step();
    }
    eager_step_done = true;
    return f.loss.loss;
  };
  hooks.validate = [&] {
    return train::evaluate(*model, data.val, data.val_transform, o, 0, 1, place);
  };
  hooks.profiled = [](int64_t step) { return record_step(step, {}); };
  train::TrainingLoop loop(o,
                           {.device = device,
                            .model = model.get(),
                            .optimizer = optimizer.get(),
                            .lr_at = [&](int64_t step) { return schedule->lr_at(step); },
                            .steps_per_epoch = steps_per_epoch,
                            .global_batch = o.batch_size,
                            .identity = {{"model", o.model}}},
                           hooks);

  std::printf("training %s on %s: %lld images of %lldx%lld, batch %lld, %lld steps per epoch%s%s\n",
              o.model.c_str(), device.str().c_str(), static_cast<long long>(samples),
              static_cast<long long>(o.image_size), static_cast<long long>(o.image_size),
              static_cast<long long>(o.batch_size), static_cast<long long>(steps_per_epoch),
              o.amp ? (o.amp_dtype == DType::kF16 ? ", amp f16" : ", amp bf16") : "",
              o.channels_last ? ", channels-last" : "");
  if (o.model_memory) {
    std::printf("model memory (parameters, gradients, optimizer state): %s\n",
                format_bytes(model_memory_bytes(params, *optimizer)).c_str());
  }
  std::fflush(stdout);

  const train::LoopResult run = loop.run();
  if (loss_scaling) {
    std::printf("loss scale %.0f, %lld step(s) skipped\n", scaler.scale(),
                static_cast<long long>(scaler.skipped_steps()));
  }
  LabResult result{.steps = run.steps,
                   .skipped_steps = scaler.skipped_steps(),
                   .last_loss = run.last_loss,
                   .test_accuracy = run.test_accuracy,
                   .timing = run.timing,
                   .step_waits = run.step_waits};
  for (nn::Parameter* p : params) result.parameters.push_back(p->value.to_vector<float>());
  return result;
}

}  // namespace day1
