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
#include "common/models/models.h"
#include "common/nn/model_pieces.h"
#include "common/optim/schedule.h"
#include "common/parallel/gradient_clipping.h"
#include "common/parallel/planning/workload.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/model_flops.h"
#include "common/train/training_loop.h"
#include "common/train/training_state.h"
#include "day4_large_models/lab_run.h"
#include "day4_large_models/memory_report.h"
#include "day4_large_models/parallel_modes.h"

namespace day4 {

using namespace course;

namespace {

// The image lab's flags: the run's, on the embedded data's defaults.
train::TrainingFlags image_flags(const GptLabOptions& o) {
  train::TrainingFlags flags;
  static_cast<train::RunFlags&>(flags) = o.run;
  flags.seed = o.seed;
  flags.data_dir = o.images.dir;
  flags.image_size = o.images.size;
  flags.test_subset = o.images.test_subset;
  return flags;
}

// The model the flags name, for the dataset's images.
nn::ModelConfig image_model_config(const std::string& model, const Dataset& images,
                                   const train::TrainingFlags& flags) {
  return {.name = model,
          .in_channels = images.channels(),
          .num_classes = images.num_classes(),
          .image_size = flags.image_size};
}

// One input as the model takes it (1, C, H, W), in the run's format: what sizes its stages.
Tensor one_image(const nn::ModelConfig& config, Device device, const train::RunFlags& run) {
  Shape shape = nn::model_pieces(config).sample;
  shape.insert(shape.begin(), 1);
  return to_memory_format(zeros(shape, DType::kF32, device), run.channels_last
                                                                 ? MemoryFormat::kChannelsLast
                                                                 : MemoryFormat::kContiguous);
}

// The run's images: each replica's step takes the micro-batches of its share (all of a
// pipeline's stages the same), from a loader over its data-parallel rank's samples; an epoch
// of `epoch_steps` steps (0: every batch of the rank's share once).
struct ImageBatches {
  ImageBatches(const train::TrainingFlags& flags, int64_t epoch_steps, const LabDatasets& data,
               const parallel::TrainingParallelism& parallelism, Device device)
      : images_per_step(flags.batch_size * parallelism.micro_batches()),
        loader(data.train, data.train_transform, loader_options(flags, images_per_step)),
        sampler{.dataset_size = data.train->size(), .shuffle = true, .seed = flags.seed},
        steps_per_epoch(epoch_steps > 0
                            ? epoch_steps
                            : batches_per_epoch(samples_per_rank(sampler, parallelism.data_ranks()),
                                                images_per_step, false)),
        batches(loader, device, flags.non_blocking,
                device.is_cpu() ? nullptr : DeviceBatches::Transfer(copy_to_device)) {}

  int64_t images_per_step;
  DataLoader loader;
  SamplerOptions sampler;
  int64_t steps_per_epoch;
  DeviceBatches batches;
};

// The loop's hooks: each epoch the data-parallel rank's samples, each step a batch through the
// parallelism, validation of the whole model over the ranks' shares of the test set.
train::LoopHooks image_hooks(const train::TrainingFlags& flags, bool cuda_graphs,
                             const LabDatasets& data, ImageBatches& images,
                             parallel::TrainingParallelism& parallelism, LabOptimizer& optimizer,
                             optim::GradientClipping& clipping, const parallel::Communicator& comm,
                             Device device) {
  train::LoopHooks hooks;
  hooks.start_epoch = [&images, &parallelism](int64_t epoch, int64_t first_batch) {
    images.batches.start_epoch(distributed_sample(images.sampler, parallelism.data_rank(),
                                                  parallelism.data_ranks(), epoch),
                               epoch, first_batch);
  };
  auto step = std::make_shared<LabStep>(optimizer, clipping, parallelism, device, cuda_graphs);
  hooks.step = [&flags, &images, step](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    const Batch batch = train::in_training_layout(images.batches.next(), flags);
    return step->run({batch.images, batch.labels}, phases);
  };
  hooks.validate = [&flags, &data, &images, &parallelism, &comm, step] {
    const train::EvalTally tally =
        train::evaluate(parallelism.whole_model(), data.val, data.val_transform, flags, comm.rank(),
                        comm.size(), [&](const Batch& host) {
                          return train::in_training_layout(images.batches.place(host), flags);
                        });
    step->recapture_after_outside_use();
    return tally;
  };
  return hooks;
}

void print_image_run_header(const GptLabOptions& o, int64_t parameters, Device device,
                            parallel::TrainingParallelism& parallelism, int64_t images,
                            int64_t steps_per_epoch) {
  std::printf(
      "training %s (%.2fM parameters%s) on %s, %s: %lld images of %lld px, batch %lld per "
      "micro-batch, %lld micro-batch(es) per step, %lld steps per epoch, %s\n",
      o.model.name.c_str(), parameters / 1e6,
      o.model.checkpoint_activations ? ", checkpointed blocks" : "", device.str().c_str(),
      parallelism.describe().c_str(), static_cast<long long>(images),
      static_cast<long long>(o.images.size), static_cast<long long>(o.run.batch_size),
      static_cast<long long>(parallelism.micro_batches()), static_cast<long long>(steps_per_epoch),
      optim::optimizer_name(o.optimizer.kind));
  if (!o.config->file.empty()) std::printf("%s\n", o.config->summary().c_str());
  std::fflush(stdout);
}

}  // namespace

ImageLabResult run_image_lab(GptLabOptions o) {
  const std::optional<LabStart> start = start_lab_run(o, [&o](int ranks) {
    const nn::ModelConfig preset = nn::preset_model_config(o.model.name);
    return EstimatedRun{
        .estimate = parallel::estimate_image_memory(image_memory_plan(o, ranks, preset)),
        .parameters = nn::pieces_parameter_count(preset)};
  });
  if (!start) return {};
  const std::shared_ptr<parallel::Communicator> comm = start->comm;
  const Device device = start->device;
  const train::TrainingFlags flags = image_flags(o);
  const LabDatasets data = open_dataset(flags);
  const int64_t resident = device_allocator(device).stats().allocated;  // the images, on the CPU
  const nn::ModelConfig model_config = image_model_config(o.model.name, *data.train, flags);
  // Data parallelism's estimate, for the lab's images (none for model parallelism).
  const auto estimate =
      checked_estimate(o, comm->size(), device, !o.grid.model_parallel(), [&](int ranks) {
        return EstimatedRun{
            .estimate = parallel::estimate_image_memory(image_memory_plan(o, ranks, model_config))};
      });
  const auto model = train::make_classifier(flags, *data.train, device);
  if (o.model.checkpoint_activations) nn::checkpoint_blocks(*model);
  const int64_t parameters = model->parameter_count();  // before sharding frees the full values
  const auto parallelism = make_image_parallelism(*model, one_image(model_config, device, o.run),
                                                  comm, {o.grid, o.data_parallel, o.run});
  ImageBatches images(flags, o.steps_per_epoch, data, *parallelism, device);
  const train::LoopResult run =
      run_lab_loop(o,
                   {.device = device,
                    .model = model.get(),
                    .parallelism = parallelism.get(),
                    .steps_per_epoch = images.steps_per_epoch,
                    .global_batch = images.images_per_step * parallelism->data_ranks(),
                    .unit = "images",
                    .flops_per_unit =
                        train::training_flops(parallel::image_workload(model_config).multiply_adds),
                    .identity = {{"model", o.model.name}, {"image_size", o.images.size}},
                    .hooks =
                        [&](LabOptimizer& optimizer, optim::GradientClipping& clipping) {
                          return image_hooks(flags, o.cuda_graphs, data, images, *parallelism,
                                             optimizer, clipping, *comm, device);
                        },
                    .estimate = estimate,
                    .parameters = parameters,
                    .resident = resident,
                    .print_header =
                        [&] {
                          print_image_run_header(o, parameters, device, *parallelism,
                                                 data.train->size(), images.steps_per_epoch);
                        }},
                   comm);
  return {.steps = run.steps,
          .last_loss = run.last_loss,
          .test_accuracy = run.test_accuracy,
          .timing = run.timing};
}

}  // namespace day4
