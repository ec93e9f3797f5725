// The day-2 lab's wiring on the shared training loop (common/train/training_loop.h): every rank
// loads its share of each epoch (TP2.1's sampler) through the DataLoader, trains a replica and
// synchronises gradients naively (TP2.2) or in overlapped buckets (TP2.3) with MPI's or the
// ring all-reduce (TP2.4), under the one-cycle or the large-batch schedule (TP2.5).
#include "day2_ddp/trainer.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/core/launch_rank.h"
#include "common/data/device_batches.h"
#include "common/nn/batch_norm.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/comm/rank_setup.h"
#include "common/tensor/device_timer.h"
#include "common/train/classifier_run.h"
#include "common/train/classifier_step.h"
#include "common/train/evaluate.h"
#include "common/train/gradient_accumulation.h"
#include "common/train/loss_scaling.h"
#include "common/train/periodic_metrics.h"
#include "common/train/training_loop.h"
#include "day2_ddp/exercises.h"
#include "day2_ddp/parallel_setup.h"

namespace day2 {

namespace {

using namespace course;
using Clock = std::chrono::steady_clock;

void print_run_header(const LabOptions& o, const parallel::Communicator& comm, Device device,
                      int64_t images, int64_t per_rank_batch, int64_t steps_per_epoch,
                      const parallel::DistributedDataParallel* ddp) {
  std::printf(
      "training %s on %d rank(s) (%s): %lld images, global batch %lld (%s per rank), %lld "
      "steps per epoch, %s gradient sync%s, %s, %s\n",
      o.model.c_str(), comm.size(), device.str().c_str(), static_cast<long long>(images),
      static_cast<long long>(per_rank_batch * o.accumulate * comm.size()),
      train::describe_step_batch(per_rank_batch, o.accumulate).c_str(),
      static_cast<long long>(steps_per_epoch), gradient_sync_name(o.ddp),
      ddp ? (" (" + std::to_string(ddp->plan().size()) + " buckets, " +
             bucket_reduction_name(o.allreduce) + ")")
                .c_str()
          : "",
      optim::optimizer_name(o.optimizer), train::precision_name(o).c_str());
  std::fflush(stdout);
}

// The day-2 step after loading: forward (batch norm synchronised over the ranks with
// --sync-bn) and backward of each micro-batch (one without --accumulate; scaled by the loss
// scaler in f16), the gradients synchronised once, after the last (DDP's buckets, or the naive
// all-reduce of TP2.2 timed here), the clip (--clip-grad-norm), the update and the periodic
// metrics.
struct LabStep {
  train::ClassifierRun& run;               // the model, optimizer, clipping and loss scaler
  parallel::DistributedDataParallel* ddp;  // none: the naive all-reduce
  std::shared_ptr<parallel::Communicator> comm;
  train::PeriodicMetrics& metrics;
  const LabOptions& o;
  IntervalTimer naive_sync{process_device()};  // the device's wait for the naive all-reduce

  Tensor step(const Batch& batch, train::StepPhases& phases) {
    nn::Module& model = *run.model;
    const Tensor loss_scale = run.loss_scale();
    const Tensor loss =
        train::accumulate_gradients(model, batch, o.accumulate, [&](const train::MicroBatch& m) {
          phases.start(train::Phase::kForward);
          train::ClassifierForward forward;
          {
            nn::SyncBatchNormScope sync_bn(parallel::sync_batch_norm(comm), o.sync_bn);
            forward = train::classifier_forward(model, m.batch, o);
          }
          phases.start(train::Phase::kBackward);
          if (ddp) ddp->set_sync(m.last);
          train::classifier_backward(model, forward, m.batch.labels, o, m.share, loss_scale);
          metrics.add_samples(forward.loss.loss, forward.logits, m.batch.labels);
          return forward.loss.loss;
        });
    if (ddp) {
      ddp->finish_backward();
    } else {
      naive_sync.start();
      allreduce_gradients(run.params, *comm);
      naive_sync.stop();
    }
    phases.start(train::Phase::kOptimizer);
    run.clip_and_step();  // every replica holds the average
    metrics.end_step(run.optimizer->steps(), run.optimizer->lr());
    return loss;
  }
};

// This process's peak resident memory.
double host_memory_peak_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // kilobytes on Linux
}

// The run's figures: the loop's, the host's peak memory, and the gradient synchronisation's
// bytes and exposed time per step (DDP's statistics, or the naive all-reduce's whole gradient
// and measured time).
void add_run_figures(LabResult& result, const train::LoopResult& run,
                     parallel::DistributedDataParallel* ddp,
                     const std::vector<nn::Parameter*>& params, double naive_sync_seconds) {
  result.steps = run.steps;
  result.last_loss = run.last_loss;
  result.test_accuracy = run.test_accuracy;
  result.timing = run.timing;
  result.host_memory_peak_mib = host_memory_peak_mib();
  if (ddp) {
    const parallel::DdpStats s = ddp->stats();  // per optimizer step: --accumulate's included
    result.sync_bytes_per_step = run.steps ? s.bytes / run.steps : 0;
    result.exposed_sync_ms_per_step = run.steps ? 1e3 * s.exposed_seconds / run.steps : 0;
  } else {
    for (const nn::Parameter* p : params)
      result.sync_bytes_per_step += static_cast<int64_t>(p->grad.nbytes());
    result.exposed_sync_ms_per_step = run.steps ? 1e3 * naive_sync_seconds / run.steps : 0;
  }
}

// After training, on rank 0: the loader's start-up, the host's peak memory, the sync figures.
void print_run_report(const LabResult& result, int64_t skipped) {
  std::printf("first batch          %.2f ms (DataLoader start-up)\n", result.first_batch_ms);
  std::printf("host memory peak     %.1f MiB (resident, rank 0)\n", result.host_memory_peak_mib);
  std::printf("gradient sync        %.2f MiB per step, %.2f ms per step exposed after backward\n",
              result.sync_bytes_per_step / 1048576.0, result.exposed_sync_ms_per_step);
  if (skipped > 0)
    std::printf("skipped %lld unreadable image(s) on rank 0\n", static_cast<long long>(skipped));
}

// A rank's training data: its share of each step's batch, a loader over its samples (the
// distributed sampler's), and the batches it places on the device.
struct RankData {
  RankData(const LabOptions& o, const parallel::Communicator& comm, Device device)
      : per_rank_batch(o.global_batch_size > 0 ? o.global_batch_size / comm.size() : o.batch_size),
        rank_step_batch(per_rank_batch * o.accumulate),  // --accumulate's micro-batches
        data(open_dataset(o)),
        loader(data.train, data.train_transform, loader_options(o, rank_step_batch)),
        sampler{.dataset_size = data.train->size(),
                .shuffle = true,
                .seed = o.seed,
                .drop_last = o.drop_last},
        batches(loader, device, o.non_blocking,
                device.is_cpu() ? nullptr : DeviceBatches::Transfer(copy_to_device)) {
    const int64_t rank_samples =
        static_cast<int64_t>(rank_indices(sampler, comm.rank(), comm.size(), 0).size());
    steps_per_epoch = batches_per_epoch(rank_samples, rank_step_batch, o.drop_last);
    train::check_micro_batches(rank_samples, rank_step_batch, o.accumulate, o.drop_last);
  }

  int64_t per_rank_batch, rank_step_batch;
  LabDatasets data;
  DataLoader loader;
  SamplerOptions sampler;
  DeviceBatches batches;
  int64_t steps_per_epoch = 0;
};

// The loop's hooks: each epoch the rank's samples, each step a batch through the lab's step (the
// first load timed into `first_batch_ms`), validation over the ranks' shares of the test set.
train::LoopHooks lab_hooks(const LabOptions& o, RankData& rank, const parallel::Communicator& comm,
                           LabStep& lab_step, nn::Module& model, double& first_batch_ms) {
  train::LoopHooks hooks;
  hooks.start_epoch = [&rank, &comm](int64_t epoch, int64_t first_batch) {
    rank.batches.start_epoch(rank_indices(rank.sampler, comm.rank(), comm.size(), epoch), epoch,
                             first_batch);
  };
  hooks.step = [&o, &rank, &lab_step, &first_batch_ms,
                first_load = true](train::StepPhases& phases) mutable {
    phases.start(train::Phase::kLoad);
    const auto load_start = Clock::now();
    const Batch batch = train::in_training_layout(rank.batches.next(), o);
    if (std::exchange(first_load, false)) {
      first_batch_ms = 1e3 * std::chrono::duration<double>(Clock::now() - load_start).count();
    }
    return lab_step.step(batch, phases);
  };
  hooks.validate = [&o, &rank, &comm, &model] {
    return train::evaluate(
        model, rank.data.val, rank.data.val_transform, o, comm.rank(), comm.size(),
        [&](const Batch& host) { return train::in_training_layout(rank.batches.place(host), o); });
  };
  return hooks;
}

}  // namespace

LabResult run_lab(const LabOptions& o) {
  const auto comm = parallel::Communicator::world();
  course::check_alike_on_every_rank([&] { validate(o, comm->size()); });
  const Device device = parallel::set_up_rank(*comm, o.comm_timeout, o.device);
  const bool lead = comm->rank() == 0;

  RankData rank_data(o, *comm, device);
  const LabDatasets& data = rank_data.data;

  train::ClassifierRun run(o, o.optimizer, *data.train, device);
  const int64_t global_batch = rank_data.rank_step_batch * comm->size();
  const auto ddp = make_ddp(o, *run.model, comm);

  LabResult result{.world_size = comm->size(), .global_batch = global_batch};
  train::PeriodicMetrics metrics(o.metric_step, o.metrics, global_batch, *comm, device);
  LabStep lab_step{.run = run, .ddp = ddp.get(), .comm = comm, .metrics = metrics, .o = o};
  train::LoopConfig config = run.loop_config(data.train->channels());
  config.lr_at = learning_rate(o, rank_data.steps_per_epoch, global_batch);
  config.steps_per_epoch = rank_data.steps_per_epoch;
  config.global_batch = global_batch;
  config.identity["global_batch"] = global_batch;
  config.comm = comm.get();
  train::TrainingLoop loop(
      o, config, lab_hooks(o, rank_data, *comm, lab_step, *run.model, result.first_batch_ms));
  if (lead) {
    print_run_header(o, *comm, device, data.train->size(), rank_data.per_rank_batch,
                     rank_data.steps_per_epoch, ddp.get());
  }

  const train::LoopResult loop_result = loop.run();
  add_run_figures(result, loop_result, ddp.get(), run.params, lab_step.naive_sync.total_seconds());
  if (lead) print_run_report(result, rank_data.loader.skipped_samples());
  train::print_loss_scaling(run.scaler.get(), lead);
  for (nn::Parameter* p : run.params) result.parameters.push_back(p->value.to_vector<float>());
  return result;
}

}  // namespace day2
