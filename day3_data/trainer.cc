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
#include "common/train/classifier_run.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/gradient_accumulation.h"
#include "common/train/training_loop.h"
#include "day3_data/exercises.h"
#include "day3_data/rank_images.h"

namespace day3 {

using namespace course;

namespace {

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
        std::string(" (") + mix_mode_name(o.mix_mode) + ")");
  }
  const auto joined = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out.empty() ? std::string("none") : out;
  };
  return "augmentation: workers " + joined(steps) + "; batch " + joined(batch_steps) +
         (batch_steps.empty() ? "" : (o.aug_device ? " on the device" : " on the host"));
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
  std::string text = std::string(optim::schedule_name(o.schedule)) + " schedule to lr " +
                     course::format_number(o.lr);
  if (o.schedule == optim::ScheduleKind::kCosine && o.cosine_floor > 0) {
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

// The optimizer the flags name, with the 1-bit optimizers' warm-up.
optim::OptimizerFlags lab_optimizer_flags(const LabOptions& o) {
  optim::OptimizerFlags flags = train::optimizer_flags(o, o.optimizer);
  flags.freeze_step = o.freeze_step;
  return flags;
}

// The replica: the run (the classifier, the optimizer, the clipping) with DDP on several ranks,
// made before the optimizer (a 1-bit one takes DDP's exchange over after its warm-up), and the
// schedule over the run's steps.
struct Replica {
  Replica(const LabOptions& o, const Dataset& train, Device device,
          const std::shared_ptr<parallel::Communicator>& comm, int64_t steps_per_epoch)
      : run(
            o,
            [this, &o, &comm](nn::Module& model) {
              if (comm && comm->size() > 1) ddp = parallel::default_ddp(model, comm);
              return parallel::make_parallel_optimizer(
                  lab_optimizer_flags(o), model.state().parameters, comm,
                  [replicas = ddp.get()](std::function<bool()> local) {
                    if (replicas) replicas->keep_gradients_local_while(std::move(local));
                  });
            },
            train, device),
        onebit_ranks(optim::is_onebit(o.optimizer) ? comm.get() : nullptr),
        schedule(optim::make_schedule(
            o.schedule, o.lr, o.epochs * steps_per_epoch,
            static_cast<int64_t>(o.warmup_epochs * static_cast<double>(steps_per_epoch)),
            o.cosine_floor * o.lr)) {}
  // DDP's hooks are on the model's parameters: it goes before the model does.
  ~Replica() { ddp.reset(); }

  std::unique_ptr<parallel::DistributedDataParallel> ddp;  // before `run`, which sets it
  train::ClassifierRun run;
  // The ranks that agree on f16's overflow: a 1-bit optimizer's gradients stay each rank's own.
  parallel::Communicator* onebit_ranks = nullptr;
  std::shared_ptr<const optim::Schedule> schedule;
};

// The epoch's training predictions, unmixed batches only: samples on the host, the correct ones
// counted on the device (read at the epoch's end, not in every step).
struct EpochTraining {
  train::EvalTally tally;
  Tensor correct;
};

// One step: the rank's next batch (staged on the device with --aug-device) in the run's layout,
// forward and backward per micro-batch (soft targets for a mixed batch; scaled by the loss scaler
// in f16), DDP's average, the clipped optimizer step.
Tensor train_step(const LabOptions& o, RankImages& images, Replica& replica, EpochTraining& epoch,
                  train::StepPhases& phases) {
  nn::Module& model = *replica.run.model;
  phases.start(train::Phase::kLoad);
  Batch batch = images.batches.next();
  if (o.aug_device) {
    phases.start(train::Phase::kAugment);
    batch = images.stage(std::move(batch));
  }
  batch = train::in_training_layout(std::move(batch), o);
  const Tensor loss_scale = replica.run.loss_scale();
  const Tensor loss =
      train::accumulate_gradients(model, batch, o.accumulate, [&](const train::MicroBatch& m) {
        phases.start(train::Phase::kForward);
        const bool mixed = m.batch.targets.defined();
        const train::ClassifierForward f = mixed ? train::soft_target_forward(model, m.batch, o)
                                                 : train::classifier_forward(model, m.batch, o);
        phases.start(train::Phase::kBackward);
        if (replica.ddp) replica.ddp->set_sync(m.last);
        if (mixed) {
          train::backward_from_logits(
              model, f, soft_target_gradient(f.loss, m.batch.targets, m.share), o, loss_scale);
        } else {
          train::classifier_backward(model, f, m.batch.labels, o, m.share, loss_scale);
          add_correct_(f.logits, m.batch.labels, epoch.correct);
          epoch.tally.samples += m.batch.labels.size(0);
        }
        return f.loss.loss;
      });
  if (replica.ddp) replica.ddp->finish_backward();
  phases.start(train::Phase::kOptimizer);
  replica.run.clip_and_step(replica.onebit_ranks);  // DDP's replicas hold the average
  return loss;
}

// The loop's hooks: each epoch the rank's span of the storage's order, each step train_step,
// validation over the ranks' shares of the test set; the tool's hooks passed on.
train::LoopHooks lab_hooks(const LabOptions& o, const RunHooks& run_hooks, RankImages& images,
                           Replica& replica, EpochTraining& epoch, int rank, int ranks) {
  train::LoopHooks hooks;
  hooks.start_epoch = [&o, &images, &epoch, rank, ranks](int64_t index, int64_t first_batch) {
    epoch.tally = {};
    fill_(epoch.correct, 0.0);
    images.start_epoch(o, index, first_batch, rank, ranks);
  };
  hooks.step = [&o, &images, &replica, &epoch](train::StepPhases& phases) {
    return train_step(o, images, replica, epoch, phases);
  };
  hooks.validate = [&o, &images, &replica, rank, ranks] {
    return train::evaluate(*replica.run.model, images.data.val, images.data.val_transform, o, rank,
                           ranks, [&](const Batch& host) {
                             return train::in_training_layout(images.batches.place(host), o);
                           });
  };
  if (run_hooks.after_epoch) {
    hooks.after_epoch = [&run_hooks](int64_t index, const train::EvalTally& validation) {
      return run_hooks.after_epoch(index, validation.accuracy());
    };
  }
  hooks.after_step = run_hooks.after_step;
  if (!o.mixing()) {
    hooks.epoch_training_tally = [&epoch] {
      epoch.tally.correct = std::llround(epoch.correct.to_vector<float>()[0]);
      return epoch.tally;
    };
  }
  return hooks;
}

void print_run_header(const LabOptions& o, const RunHooks& run_hooks, const RankImages& images,
                      const Replica& replica, Device device, int ranks) {
  const std::string where = ranks == 1
                                ? device.str()
                                : std::to_string(ranks) + " ranks (" + device.str() + ", DDP in " +
                                      std::to_string(replica.ddp->plan().size()) + " buckets)";
  const char* per_rank = ranks == 1 ? "" : " per rank";
  std::printf("%s\n", describe_storage(o, *images.data.train).c_str());
  if (images.decoder) {
    std::printf("decoding: on %s, %s\n", device.str().c_str(), images.decoder->describe().c_str());
  }
  std::printf(
      "training %s on %s: %lld images of %lldx%lld%s, batch %s%s, %lld steps per epoch%s%s\n"
      "%s\noptimizer: %s, %s\n",
      o.model.c_str(), where.c_str(), static_cast<long long>(images.samples),
      static_cast<long long>(o.image_size), static_cast<long long>(o.image_size), per_rank,
      train::describe_step_batch(o.batch_size, o.accumulate).c_str(), per_rank,
      static_cast<long long>(images.steps_per_epoch),
      o.amp ? (", " + train::precision_name(o)).c_str() : "",
      o.channels_last ? ", channels-last" : "", describe(o, images.data.train_transform).c_str(),
      optim::optimizer_name(o.optimizer), describe_schedule(o, run_hooks).c_str());
  std::fflush(stdout);
}

// After the run: the decoder's figures, and on several ranks the traffic and whether the
// replicas stayed identical (collective).
void print_run_report(const train::LoopResult& run, const RankImages& images, Replica& replica,
                      parallel::Communicator* comm, bool lead) {
  if (images.decoder && lead) std::printf("%s\n", images.decoder->summary().c_str());
  if (!replica.ddp) return;
  if (lead && run.steps > 0) {
    std::printf("communication per step on rank 0: %.3f MiB sent (ring)\n",
                comm->traffic().bytes / static_cast<double>(run.steps) / (1 << 20));
  }
  const float divergence = parallel::replica_divergence(*replica.run.model, *comm);
  if (lead && divergence == 0) {
    std::printf("replicas: identical weights on all %d ranks\n", comm->size());
  } else if (lead) {
    std::printf("replicas: weights differ by up to %g between ranks\n", divergence);
  }
}

}  // namespace

LabResult run_lab(const LabOptions& o, const RunHooks& run_hooks,
                  const std::shared_ptr<parallel::Communicator>& comm) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const Device device = rank_device(o, comm.get());
  require_device(device);
  const int rank = comm ? comm->rank() : 0, ranks = comm ? comm->size() : 1;
  const bool lead = rank == 0;

  RankImages images(o, device, rank, ranks);
  Replica replica(o, *images.data.train, device, comm, images.steps_per_epoch);
  EpochTraining epoch{.correct = zeros({1}, DType::kF32, device)};
  train::LoopConfig config = replica.run.loop_config(images.data.train->channels());
  config.lr_at = run_hooks.lr_at ? run_hooks.lr_at : [schedule = replica.schedule](int64_t step) {
    return schedule->lr_at(step);
  };
  config.steps_per_epoch = images.steps_per_epoch;
  config.global_batch = images.step_batch * ranks;
  config.comm = comm.get();
  config.recipe = "- optimizer: " + std::string(optim::optimizer_name(o.optimizer)) + ", " +
                  describe_schedule(o, run_hooks) + "\n- " +
                  describe(o, images.data.train_transform) + "\n- " +
                  describe_storage(o, *images.data.train);
  train::TrainingLoop loop(o, config, lab_hooks(o, run_hooks, images, replica, epoch, rank, ranks));
  if (lead) print_run_header(o, run_hooks, images, replica, device, ranks);

  const train::LoopResult run = loop.run();
  print_run_report(run, images, replica, comm.get(), lead);
  train::print_loss_scaling(replica.run.scaler.get(), lead);
  return {.steps = run.steps,
          .steps_per_epoch = images.steps_per_epoch,
          .last_loss = run.last_loss,
          .test_accuracy = run.test_accuracy,
          .ended_early = run.ended_early,
          .timing = run.timing};
}

}  // namespace day3
