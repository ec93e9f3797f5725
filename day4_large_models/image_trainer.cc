// The image models' wiring on the shared training loop (common/train/training_loop.h): the
// embedded images through the DataLoader, each data-parallel replica its share of every epoch,
// the classifier's step through the chosen parallelism (data parallel, or pipeline stages:
// parallel_modes.h), validation over every rank.
#include "day4_large_models/image_trainer.h"

#include <cstdio>

#include "common/core/launch_rank.h"
#include "common/data/device_batches.h"
#include "common/data/distributed_sampler.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/nn/model_pieces.h"
#include "common/nn/models.h"
#include "common/optim/schedule.h"
#include "common/parallel/gradient_clipping.h"
#include "common/parallel/rank_setup.h"
#include "common/parallel/workload.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/model_flops.h"
#include "common/train/training_loop.h"
#include "common/train/training_state.h"
#include "day4_large_models/memory_report.h"
#include "day4_large_models/parallel_modes.h"
#include "day4_large_models/pipeline_report.h"
#include "day4_large_models/throughput_report.h"

namespace day4 {

using namespace course;

namespace {

// The image lab's flags: the run's, on the embedded data's defaults.
train::TrainingFlags image_flags(const GptLabOptions& o) {
  train::TrainingFlags flags;
  static_cast<train::RunFlags&>(flags) = o;
  flags.seed = o.seed;
  flags.data_dir = o.image_dir;
  flags.image_size = o.image_size;
  flags.test_subset = o.test_subset;
  return flags;
}

// --throughput-gpus: the throughput model's grids; --estimate-only: the preset's estimate for
// --estimate-ranks (0: the run's ranks). Nothing is trained.
void print_preset_figures(const GptLabOptions& o, int ranks) {
  if (o.throughput_gpus > 0) {
    print_throughput_table(o, o.throughput_gpus);
    return;
  }
  const int estimated = o.estimate_ranks > 0 ? o.estimate_ranks : ranks;
  validate_grid_ranks(o, estimated);
  const nn::ModelConfig preset = nn::preset_model_config(o.model);
  print_memory_estimate(o, estimated,
                        parallel::estimate_image_memory(image_memory_plan(o, estimated, preset)),
                        nn::pieces_parameter_count(preset));
}

}  // namespace

ImageLabResult run_image_lab(const GptLabOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const auto comm = parallel::Communicator::world();
  const Device device = parallel::set_up_rank(*comm, o.comm_timeout, o.device);
  if (o.throughput_gpus > 0 || o.estimate_only) {
    if (comm->rank() == 0) print_preset_figures(o, comm->size());
    return {};
  }
  COURSE_CHECK(!o.sharding || comm->size() > 1, "--sharding ", sharding_flag(o),
               " shards over the data-parallel ranks and needs at least 2; this run has 1 "
               "(start it with mpirun -np N, or srun)");
  const train::TrainingFlags flags = image_flags(o);
  const LabDatasets data = open_dataset(flags);
  const auto place = [&o](Batch b) {
    if (o.channels_last) b.images = to_memory_format(b.images, MemoryFormat::kChannelsLast);
    return b;
  };

  // The memory estimate of data parallelism, once per run, for the lab's images.
  const int64_t resident = device_allocator(device).stats().allocated;  // the images, on the CPU
  const nn::ModelConfig model_config{.name = o.model,
                                     .in_channels = data.train->channels(),
                                     .num_classes = data.train->num_classes(),
                                     .image_size = flags.image_size};
  const auto estimate = model_parallel(o) ? std::nullopt
                                          : std::optional(parallel::estimate_image_memory(
                                                image_memory_plan(o, comm->size(), model_config)));
  if (estimate) enforce_memory_budget(o, comm->size(), *estimate, device);
  const auto model = train::make_classifier(flags, *data.train, device);
  if (o.checkpoint_activations) nn::checkpoint_blocks(*model);
  const int64_t parameters = model->parameter_count();  // before sharding frees the full values
  // One input as the model takes it (1, C, H, W), in the run's format: what sizes its stages.
  Shape one_image = nn::model_pieces(model_config).sample;
  one_image.insert(one_image.begin(), 1);
  const Tensor sample =
      to_memory_format(zeros(one_image, DType::kF32, device),
                       o.channels_last ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
  const auto parallelism = make_image_parallelism(*model, sample, comm, o);

  // Each replica's step takes the micro-batches of its share (all of a pipeline's stages the same).
  const int64_t images_per_step = o.batch_size * parallelism->micro_batches();
  DataLoader loader(data.train, data.train_transform, loader_options(flags, images_per_step));
  const SamplerOptions sampler{.dataset_size = data.train->size(), .shuffle = true, .seed = o.seed};
  const int64_t steps_per_epoch =
      o.steps_per_epoch > 0
          ? o.steps_per_epoch
          : batches_per_epoch(samples_per_rank(sampler, parallelism->data_ranks()), images_per_step,
                              false);
  DeviceBatches batches(loader, device, flags.non_blocking,
                        device.is_cpu() ? nullptr : DeviceBatches::Transfer(copy_to_device));
  LabOptimizer optimizer = make_lab_optimizer(o, *parallelism, comm, o.epochs * steps_per_epoch);

  optim::GradientClipping clipping(o.clip_grad_norm);
  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    batches.start_epoch(
        distributed_sample(sampler, parallelism->data_rank(), parallelism->data_ranks(), epoch),
        epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    const Batch batch = place(batches.next());
    return train_step(optimizer, clipping, *parallelism, {batch.images, batch.labels}, phases);
  };
  hooks.validate = [&] {
    return train::evaluate(parallelism->whole_model(), data.val, data.val_transform, flags,
                           comm->rank(), comm->size(),
                           [&](const Batch& host) { return place(batches.place(host)); });
  };
  const nlohmann::json layout = parallelism->checkpoint_layout();
  nlohmann::json identity = {{"model", o.model}, {"image_size", o.image_size}};
  identity.update(layout);
  train::TrainingLoop loop(
      o,
      {.device = device,
       .model = model.get(),
       .optimizer = optimizer.optimizer.get(),
       .lr_at = [&](int64_t step) { return optimizer.schedule->lr_at(step); },
       .steps_per_epoch = steps_per_epoch,
       .global_batch = images_per_step * parallelism->data_ranks(),
       .flops_per_unit =
           train::training_flops(parallel::image_workload(model_config).multiply_adds),
       .identity = identity,
       .comm = comm.get(),
       .rank_state = checkpoint_rank_state(layout, *parallelism, *optimizer.optimizer),
       .clipping = &clipping},
      hooks);
  if (!o.resume.empty()) parallelism->after_step();
  const bool lead = comm->rank() == 0;
  if (lead) {
    if (estimate) print_memory_estimate(o, comm->size(), *estimate, parameters);
    std::printf(
        "training %s (%.2fM parameters%s) on %s, %s: %lld images of %lld px, batch %lld per "
        "micro-batch, %lld micro-batch(es) per step, %lld steps per epoch, %s\n",
        o.model.c_str(), parameters / 1e6, o.checkpoint_activations ? ", checkpointed blocks" : "",
        device.str().c_str(), parallelism->describe().c_str(),
        static_cast<long long>(data.train->size()), static_cast<long long>(o.image_size),
        static_cast<long long>(o.batch_size), static_cast<long long>(parallelism->micro_batches()),
        static_cast<long long>(steps_per_epoch), o.optimizer.c_str());
    if (!o.config->file.empty()) std::printf("%s\n", o.config->summary().c_str());
    std::fflush(stdout);
  }
  const train::LoopResult run = loop.run();
  print_parallel_reports(*parallelism, run, o, lead, comm->size());
  if (lead && run.steps > 0 && estimate) {
    print_measured_against_estimate(*estimate, device, run.timing.max_memory_allocated, resident);
  }
  return {.steps = run.steps,
          .last_loss = run.last_loss,
          .test_accuracy = run.test_accuracy,
          .timing = run.timing};
}

}  // namespace day4
