// The day-3 lab's wiring on the shared training loop (common/train/training_loop.h): the
// augmented data in its storage format's epoch order, the batch stage on the host or the
// device, and the step on soft targets when the batch was mixed.
#include "day3_data/trainer.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/core/format.h"
#include "common/core/launch_rank.h"
#include "common/data/batch_augment.h"
#include "common/data/batch_mix.h"
#include "common/data/device_batches.h"
#include "common/data/device_decode.h"
#include "common/data/epoch_order.h"
#include "common/data/packed_images.h"
#include "common/data/tar_shards.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/reduce.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/gradient_accumulation.h"
#include "common/train/model_flops.h"
#include "common/train/training_loop.h"
#include "day3_data/exercises.h"

namespace day3 {

using namespace course;

namespace {

// What the loader's workers do to each training image, in torchvision's order.
void set_worker_augmentation(const LabOptions& o, TransformOptions& t) {
  const AugmentPolicy policy = o.policy();
  const JitterOptions jitter = o.aug_device ? JitterOptions{} : o.jitter();
  if (!t.train) t.random_crop = false;  // in-memory images crop only with --augment
  t.train = t.train || policy.kind != AugmentPolicyKind::kNone || jitter.active();
  t.flip = !o.aug_device;
  t.jitter = jitter;
  t.policy = policy;
}

std::string describe(const LabOptions& o, const TransformOptions& t) {
  std::vector<std::string> steps;
  if (t.train && t.random_crop) steps.push_back("crop");
  if (t.train && t.flip) steps.push_back("flip");
  if (t.jitter.active()) steps.push_back("jitter");
  if (t.policy.kind == AugmentPolicyKind::kRandAugment) {
    steps.push_back("RandAugment(" + std::to_string(t.policy.ops) + ", " +
                    std::to_string(t.policy.magnitude) + ")");
  } else if (t.policy.kind == AugmentPolicyKind::kTrivialAugmentWide) {
    steps.push_back("TrivialAugmentWide");
  }
  std::vector<std::string> batch_steps;
  if (o.aug_device) batch_steps.push_back("flip");
  if (o.aug_device && o.jitter().active()) batch_steps.push_back("jitter");
  if (o.mixing()) {
    batch_steps.push_back(
        (o.mixup > 0 && o.cutmix > 0 ? "MixUp/CutMix" : (o.mixup > 0 ? "MixUp" : "CutMix")) +
        std::string(" (") + o.mix_mode + ")");
  }
  const auto joined = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out.empty() ? std::string("none") : out;
  };
  return "augmentation: workers " + joined(steps) + "; batch " + joined(batch_steps) +
         (batch_steps.empty() ? "" : (o.aug_device ? " on the device" : " on the host"));
}

// TP3.5's order of a packed file, drawn from (seed, epoch).
std::vector<int64_t> trainee_page_order(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, uint32_t seed, int64_t epoch) {
  std::seed_seq seeds{seed, static_cast<uint32_t>(epoch)};
  std::mt19937 rng(seeds);
  return quasi_random_pages(sample_pages, pages_in_memory, rng);
}

std::string describe_storage(const LabOptions& o, const Dataset& data) {
  if (const auto* shards = dynamic_cast<const TarShards*>(&data)) {
    return "storage: " + std::to_string(shards->shard_sizes().size()) +
           " tar shard(s) in WebDataset's order, a buffer of " + std::to_string(o.shuffle_buffer) +
           " samples";
  }
  if (const auto* packed = dynamic_cast<const PackedImages*>(&data)) {
    const std::set<int64_t> pages(packed->sample_pages().begin(), packed->sample_pages().end());
    return "storage: a packed file of " + std::to_string(pages.size()) + " page(s) of " +
           std::to_string(packed->layout().page_size >> 10) + " KiB in quasi-random order, " +
           std::to_string(o.pages_in_memory) + " at a time";
  }
  return "storage: " + (o.synthetic > 0 ? std::string("synthetic") : o.data_dir) + ", shuffled";
}

std::string describe_schedule(const LabOptions& o, const RunHooks& run_hooks) {
  if (run_hooks.lr_at) return "the learning-rate finder's rates";
  std::string text = o.schedule + " schedule to lr " + course::format_number(o.lr);
  if (o.schedule == "cosine" && o.cosine_floor > 0) {
    text += " down to " + course::format_number(o.cosine_floor * o.lr);
  }
  if (o.warmup_epochs > 0)
    text += ", warm-up " + course::format_number(o.warmup_epochs) + " epochs";
  return text;
}

// This process's device: a rank's (parallel::set_up_rank), or the one of --device alone.
Device rank_device(const LabOptions& o, parallel::Communicator* comm) {
  if (comm) return parallel::set_up_rank(*comm, o.comm_timeout, o.device);
  const Device device = named_or_default_device(o.device);
  set_process_device(device);
  return device;
}

}  // namespace

LabResult run_lab(const LabOptions& o, const RunHooks& run_hooks,
                  const std::shared_ptr<parallel::Communicator>& comm) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const Device device = rank_device(o, comm.get());
  require_device(device);
  const int rank = comm ? comm->rank() : 0, ranks = comm ? comm->size() : 1;
  const bool lead = rank == 0;

  LabDatasets data = open_dataset(o, group_members);
  check_decode_device(o, *data.train);
  set_worker_augmentation(o, data.train_transform);
  const int64_t classes = data.train->num_classes();
  const int64_t samples = rank_span_size(data.train->size(), ranks, o.drop_last);  // this rank's
  COURSE_CHECK(samples > 0, "--drop-last leaves no training image for each of ", ranks, " ranks");
  const int64_t step_batch = o.batch_size * o.accumulate;  // --accumulate's micro-batches
  COURSE_CHECK(!o.mixing() || o.drop_last || samples % step_batch % 2 == 0,
               "--mixup and --cutmix need even batches, but the epoch's last batch has ",
               samples % step_batch, " images", ranks > 1 ? " on each rank" : "",
               ": add --drop-last");
  const TransformOptions& t = data.train_transform;
  const MixOptions mix = o.mix_options();
  std::mt19937 batch_rng(o.seed + 3 + 1000003u * static_cast<uint32_t>(rank));  // per rank
  // Flip and jitter (with --aug-device), then MixUp / CutMix, of a batch on its device.
  const auto batch_stage = [&](Batch b) {
    if (o.aug_device) b.images = jitter_batch(b.images, o.jitter(), t.mean, t.std, batch_rng);
    if (o.mixing()) {
      const MixPlan plan = plan_batch_mix(b.images.size(0), b.images.size(2), b.images.size(3), mix,
                                          batch_rng, cutmix_cut);
      if (b.images.device().is_cpu()) {  // the loader's batch: TP3.2's targets
        b.images = mix_images(b.images, plan);
        check_class_labels(b.labels, classes);
        b.targets = Tensor::from_vector(
            mixed_targets(b.labels.to_vector<int64_t>(), plan.lambdas, classes, o.label_smoothing),
            {b.images.size(0), classes});
      } else {  // on the device, the labels too (the reference copy of TP3.2, batch_mix.h)
        MixedBatch mixed = mix_batch(b.images, b.labels, plan, classes, o.label_smoothing);
        b.images = std::move(mixed.images);
        b.targets = std::move(mixed.targets);
      }
    }
    return b;
  };

  DataLoader loader(data.train, data.train_transform, loader_options(o, step_batch));
  const int64_t steps_per_epoch = batches_per_epoch(samples, step_batch, o.drop_last);
  train::check_micro_batches(samples, step_batch, o.accumulate, o.drop_last);
  // Without --aug-device the batch stage runs on each loaded training batch on the host.
  DeviceBatches::Transfer transfer;
  if (!device.is_cpu()) transfer = copy_to_device;
  std::optional<DeviceDecoder> decoder;  // --decode-device gpu: the loader's batches are JPEGs
  if (o.decode_device == DecodeDevice::kGpu) {
    decoder.emplace(device);
    if (o.channels_last) decoder->set_memory_format(MemoryFormat::kChannelsLast);
    transfer = [&decoder](const Batch& host, Device to, const Stream& stream) {
      return host.encoded ? decoder->decode(host, stream) : copy_to_device(host, to, stream);
    };
  }
  DeviceBatches::Prepare prepare;
  if (o.mixing() && !o.aug_device) prepare = batch_stage;
  DeviceBatches batches(loader, device, o.non_blocking, transfer, prepare);

  const auto model = train::make_classifier(o, *data.train, device);
  const auto ddp = comm && comm->size() > 1 ? parallel::default_ddp(*model, comm) : nullptr;
  const auto optimizer = parallel::make_parallel_optimizer(
      {.kind = o.optimizer,
       .lr = o.lr,
       .momentum = o.mom,
       .weight_decay = o.wd,
       .freeze_step = o.freeze_step},
      model->state().parameters, comm, [&](std::function<bool()> local) {
        if (ddp) ddp->keep_gradients_local_while(std::move(local));
      });
  const std::vector<nn::Parameter*> params = model->parameters();
  optim::GradientClipping clipping(o.clip_grad_norm);
  const std::shared_ptr<const optim::Schedule> schedule = optim::make_schedule(
      o.schedule, o.lr, o.epochs * steps_per_epoch,
      static_cast<int64_t>(o.warmup_epochs * static_cast<double>(steps_per_epoch)),
      o.cosine_floor * o.lr);

  // The epoch's training predictions, unmixed batches only: samples on the host, the correct
  // ones counted on the device (read at the epoch's end, not in every step).
  train::EvalTally epoch_training;
  Tensor epoch_correct = zeros({1}, DType::kF32, device);
  train::LoopHooks hooks;
  hooks.start_epoch = [&](int64_t epoch, int64_t first_batch) {
    epoch_training = {};
    fill_(epoch_correct, 0.0);
    const OrderOptions order{.shuffle_buffer = o.shuffle_buffer,
                             .pages_in_memory = o.pages_in_memory};
    batches.start_epoch(
        rank_span(epoch_order(*data.train, order, o.seed, epoch, trainee_page_order), rank, ranks,
                  o.drop_last),
        epoch, first_batch);
  };
  hooks.step = [&](train::StepPhases& phases) {
    phases.start(train::Phase::kLoad);
    Batch batch = batches.next();
    if (o.aug_device) {
      phases.start(train::Phase::kAugment);
      batch = batch_stage(batch);
    }
    batch = train::in_training_layout(std::move(batch), o);
    const Tensor loss =
        train::accumulate_gradients(*model, batch, o.accumulate, [&](const train::MicroBatch& m) {
          phases.start(train::Phase::kForward);
          const bool mixed = m.batch.targets.defined();
          const train::ClassifierForward f = mixed ? train::soft_target_forward(*model, m.batch, o)
                                                   : train::classifier_forward(*model, m.batch, o);
          phases.start(train::Phase::kBackward);
          if (ddp) ddp->set_sync(m.last);
          if (mixed) {
            train::backward_from_logits(*model, f,
                                        soft_target_gradient(f.loss, m.batch.targets, m.share), o);
          } else {
            train::classifier_backward(*model, f, m.batch.labels, o, m.share);
            add_correct_(f.logits, m.batch.labels, epoch_correct);
            epoch_training.samples += m.batch.labels.size(0);
          }
          return f.loss.loss;
        });
    if (ddp) ddp->finish_backward();
    phases.start(train::Phase::kOptimizer);
    clipping.apply_to_whole(params);  // every replica holds the average
    optimizer->step();
    return loss;
  };
  hooks.validate = [&] {
    return train::evaluate(
        *model, data.val, data.val_transform, o, rank, ranks,
        [&](const Batch& host) { return train::in_training_layout(batches.place(host), o); });
  };
  if (run_hooks.after_epoch) {
    hooks.after_epoch = [&](int64_t epoch, const train::EvalTally& validation) {
      return run_hooks.after_epoch(epoch, validation.accuracy());
    };
  }
  hooks.after_step = run_hooks.after_step;
  if (!o.mixing()) {
    hooks.epoch_training_tally = [&] {
      epoch_training.correct = std::llround(epoch_correct.to_vector<float>()[0]);
      return epoch_training;
    };
  }
  train::TrainingLoop loop(
      o,
      {.device = device,
       .model = model.get(),
       .optimizer = optimizer.get(),
       .lr_at =
           run_hooks.lr_at ? run_hooks.lr_at : [&](int64_t step) { return schedule->lr_at(step); },
       .steps_per_epoch = steps_per_epoch,
       .global_batch = step_batch * ranks,
       .flops_per_unit = train::training_flops(
           train::classifier_multiply_adds(*model, data.train->channels(), o, device)),
       .identity = {{"model", o.model}},
       .comm = comm.get(),
       .recipe = "- optimizer: " + std::string(optim::optimizer_name(o.optimizer)) + ", " +
                 describe_schedule(o, run_hooks) + "\n- " + describe(o, data.train_transform) +
                 "\n- " + describe_storage(o, *data.train),
       .clipping = &clipping},
      hooks);

  if (lead) {
    const std::string where = ranks == 1 ? device.str()
                                         : std::to_string(ranks) + " ranks (" + device.str() +
                                               ", DDP in " + std::to_string(ddp->plan().size()) +
                                               " buckets)";
    const char* per_rank = ranks == 1 ? "" : " per rank";
    std::printf("%s\n", describe_storage(o, *data.train).c_str());
    if (decoder)
      std::printf("decoding: on %s, %s\n", device.str().c_str(), decoder->describe().c_str());
    std::printf(
        "training %s on %s: %lld images of %lldx%lld%s, batch %s%s, %lld steps per epoch%s%s\n"
        "%s\noptimizer: %s, %s\n",
        o.model.c_str(), where.c_str(), static_cast<long long>(samples),
        static_cast<long long>(o.image_size), static_cast<long long>(o.image_size), per_rank,
        train::describe_step_batch(o.batch_size, o.accumulate).c_str(), per_rank,
        static_cast<long long>(steps_per_epoch), o.amp ? ", amp bf16" : "",
        o.channels_last ? ", channels-last" : "", describe(o, data.train_transform).c_str(),
        optim::optimizer_name(o.optimizer), describe_schedule(o, run_hooks).c_str());
    std::fflush(stdout);
  }
  const train::LoopResult run = loop.run();
  if (decoder && lead) std::printf("%s\n", decoder->summary().c_str());
  if (ddp) {
    if (lead && run.steps > 0) {
      std::printf("communication per step on rank 0: %.3f MiB sent (ring)\n",
                  comm->traffic().bytes / static_cast<double>(run.steps) / (1 << 20));
    }
    const float divergence = parallel::replica_divergence(*model, *comm);
    if (lead && divergence == 0) {
      std::printf("replicas: identical weights on all %d ranks\n", ranks);
    } else if (lead) {
      std::printf("replicas: weights differ by up to %g between ranks\n", divergence);
    }
  }
  return {.steps = run.steps,
          .steps_per_epoch = steps_per_epoch,
          .last_loss = run.last_loss,
          .test_accuracy = run.test_accuracy,
          .ended_early = run.ended_early,
          .timing = run.timing};
}

}  // namespace day3
