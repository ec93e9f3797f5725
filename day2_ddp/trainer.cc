// The day-2 training run.
#include "day2_ddp/trainer.h"

#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/data/data_loader.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/layout.h"
#include "common/nn/autocast.h"
#include "common/nn/batch_norm.h"
#include "common/nn/models.h"
#include "common/optim/large_batch.h"
#include "common/optim/schedule.h"
#include "common/train/progress.h"
#include "common/train/stop_signal.h"
#include "common/train/training_state.h"
#include "day2_ddp/data.h"
#include "day2_ddp/exercises.h"

namespace day2 {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kValidationBatch = 250;

std::unique_ptr<optim::Optimizer> make_optimizer(
    const LabOptions& o, std::vector<std::pair<std::string, nn::Parameter*>> params) {
  if (o.optimizer == "adamw") {
    return std::make_unique<optim::AdamW>(params,
                                          optim::AdamWOptions{.lr = o.lr, .weight_decay = o.wd});
  }
  if (o.optimizer == "lars") {
    return std::make_unique<optim::Lars>(
        params, optim::LarsOptions{.lr = o.lr, .momentum = o.mom, .weight_decay = o.wd});
  }
  if (o.optimizer == "lamb") {
    return std::make_unique<optim::Lamb>(params,
                                         optim::LambOptions{.lr = o.lr, .weight_decay = o.wd});
  }
  return std::make_unique<optim::Sgd>(
      params, optim::SgdOptions{.lr = o.lr, .momentum = o.mom, .weight_decay = o.wd});
}

// OpenMP threads per rank: the node's cores shared by its ranks, unless OMP_NUM_THREADS says.
void share_cores(const dist::Communicator& comm) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, cores / comm.local_size()));
}

Tensor prepare_images(const Tensor& images, Device device, const LabOptions& o) {
  Tensor x = device.is_cpu() ? images : images.to(device);
  return o.channels_last ? to_memory_format(x, MemoryFormat::kChannelsLast) : x;
}

// Accuracy and loss over the whole validation set: rank r takes samples r, r + n, ...
train::EvalTally validate_model(nn::Module& model, const LabData& data, const LabOptions& o,
                                Device device, dist::Communicator& comm) {
  model.set_training(false);
  DataLoader loader(data.val, data.val_transform,
                    {.batch_size = kValidationBatch,
                     .num_workers = o.num_workers,
                     .prefetch_factor = o.prefetch_factor,
                     .persistent_workers = false,
                     .pin_memory = o.pin_memory,
                     .skip_corrupt = o.skip_corrupt});
  std::vector<int64_t> mine;
  for (int64_t i = comm.rank(); i < data.val->size(); i += comm.size()) mine.push_back(i);
  train::EvalTally tally;
  if (!mine.empty()) {
    loader.start_epoch(mine, 0);
    nn::Autocast autocast(o.amp_dtype, o.amp);
    while (!loader.done()) {
      const Batch batch = loader.next();
      const Tensor logits = model.forward(prepare_images(batch.images, device, o));
      train::tally(logits, batch.labels.to(device), tally);
    }
  }
  model.set_training(true);
  const std::vector<float> sums =
      dist::allreduce_sum({static_cast<float>(tally.correct), static_cast<float>(tally.loss_sum),
                           static_cast<float>(tally.samples)},
                          comm);
  return {static_cast<int64_t>(sums[0]), sums[1], static_cast<int64_t>(sums[2])};
}

// The learning rate of each step: the large-batch schedule of TP2.5 with --base-batch, else
// day 1's one-cycle.
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
  std::shared_ptr<const optim::Schedule> one_cycle = optim::one_cycle_schedule(o.lr, total_steps);
  return [one_cycle](int64_t step) { return one_cycle->lr_at(step); };
}

// Bucketed DDP (TP2.3's plan, MPI's or TP2.4's all-reduce) for --ddp buckets; for --ddp naive
// only rank 0's weights broadcast, the step then calls TP2.2's allreduce_gradients (null).
std::unique_ptr<dist::DistributedDataParallel> make_ddp(
    const LabOptions& o, nn::Module& model, const std::shared_ptr<dist::Communicator>& comm) {
  if (o.ddp == "naive") {
    dist::broadcast_state(model, *comm);
    return nullptr;
  }
  std::vector<int64_t> bytes;
  for (const nn::Parameter* p : model.parameters()) {
    bytes.push_back(static_cast<int64_t>(p->grad.nbytes()));
  }
  dist::BucketAllreduce reduce;
  if (o.allreduce == "ring") {
    reduce = [comm](Tensor& bucket) {
      ring_allreduce(bucket, *comm);
      return dist::completed_work();
    };
  }
  return std::make_unique<dist::DistributedDataParallel>(
      model, comm,
      plan_buckets(bytes, static_cast<int64_t>(o.bucket_cap_mb * (1 << 20)),
                   static_cast<int64_t>(o.first_bucket_mb * (1 << 20))),
      dist::DdpOptions{.overlap = o.overlap, .find_unused_parameters = o.find_unused_parameters},
      reduce);
}

// A stop signal received by any rank, so that every rank stops after the same step.
int agreed_stop_signal(dist::Communicator& comm) {
  Tensor signal = Tensor::from_vector<int32_t>({train::stop_signal()}, {1});
  comm.allreduce(signal, dist::ReduceOp::kMax)->wait();
  return signal.to_vector<int32_t>()[0];
}

void append_metrics(const std::string& path, const nlohmann::json& line) {
  if (!path.empty()) std::ofstream(path, std::ios::app) << line.dump() << "\n";
}

}  // namespace

LabResult run_lab(const LabOptions& o) {
  const auto comm = dist::Communicator::world();
  comm->set_timeout(o.comm_timeout);
  validate(o, comm->size());
  share_cores(*comm);
  const bool lead = comm->rank() == 0;
  const Device device =
      !o.device.empty()
          ? parse_device(o.device)
          : (cuda_device_count() > 0 ? Device::cuda(comm->local_rank() % cuda_device_count())
                                     : Device::cpu());
  require_device(device);

  const int64_t per_rank_batch =
      o.global_batch_size > 0 ? o.global_batch_size / comm->size() : o.batch_size;
  const LabData data = load_lab_data(o);
  DataLoader loader(data.train, data.train_transform,
                    {.batch_size = per_rank_batch,
                     .num_workers = o.num_workers,
                     .prefetch_factor = o.prefetch_factor,
                     .persistent_workers = o.persistent_workers,
                     .pin_memory = o.pin_memory,
                     .drop_last = o.drop_last,
                     .skip_corrupt = o.skip_corrupt,
                     .seed = o.seed});
  const SamplerOptions sampler{.dataset_size = data.train->size(),
                               .shuffle = true,
                               .seed = o.seed,
                               .drop_last = o.drop_last};
  const int64_t rank_samples =
      static_cast<int64_t>(rank_indices(sampler, comm->rank(), comm->size(), 0).size());
  const int64_t steps_per_epoch = o.drop_last
                                      ? rank_samples / per_rank_batch
                                      : (rank_samples + per_rank_batch - 1) / per_rank_batch;
  COURSE_CHECK(steps_per_epoch > 0, "no complete batch of ", per_rank_batch, " in the ",
               rank_samples, " samples of a rank");

  auto model = nn::make_model({.name = o.model,
                               .in_channels = data.train->channels(),
                               .num_classes = data.train->num_classes(),
                               .seed = o.seed},
                              device);
  const std::vector<nn::Parameter*> params = model->parameters();
  const auto optimizer = make_optimizer(o, model->state().parameters);
  const auto lr_at = learning_rate(o, steps_per_epoch, per_rank_batch * comm->size());

  const auto ddp = make_ddp(o, *model, comm);

  int64_t start_epoch = 0, start_batch = 0;
  if (!o.resume.empty()) {
    const auto header = train::load_checkpoint(o.resume, train::training_state(*model, *optimizer));
    COURSE_CHECK(header.value("model", "") == o.model &&
                     header.value("global_batch", 0) == per_rank_batch * comm->size(),
                 "checkpoint ", o.resume, " is of another model or global batch");
    start_epoch = header.at("epoch");
    start_batch = header.at("batch");
    optimizer->set_steps(header.at("step"));
  }
  const auto save = [&](int64_t epoch, int64_t batch) {
    if (o.chkpt.empty() || !lead) return;
    train::save_checkpoint(o.chkpt, train::training_state(*model, *optimizer),
                           {{"model", o.model},
                            {"global_batch", per_rank_batch * comm->size()},
                            {"epoch", epoch},
                            {"batch", batch},
                            {"step", optimizer->steps()}});
  };

  LabResult result;
  result.world_size = comm->size();
  result.global_batch = per_rank_batch * comm->size();
  if (lead) {
    std::printf(
        "training %s on %d rank(s) (%s): %lld images, global batch %lld (%lld per rank), %lld "
        "steps per epoch, %s gradient sync%s, %s\n",
        o.model.c_str(), comm->size(), device.str().c_str(),
        static_cast<long long>(data.train->size()), static_cast<long long>(result.global_batch),
        static_cast<long long>(per_rank_batch), static_cast<long long>(steps_per_epoch),
        o.ddp.c_str(),
        o.ddp == "buckets"
            ? (" (" + std::to_string(ddp->plan().size()) + " buckets, " + o.allreduce + ")").c_str()
            : "",
        o.optimizer.c_str());
    std::fflush(stdout);
  }

  train::Chronometer chrono(device);
  double naive_sync_seconds = 0;
  int64_t run_steps = 0;
  for (int64_t epoch = start_epoch; epoch < o.epochs; ++epoch) {
    std::vector<int64_t> indices = rank_indices(sampler, comm->rank(), comm->size(), epoch);
    const int64_t first = epoch == start_epoch ? start_batch : 0;
    indices.erase(indices.begin(),
                  indices.begin() + std::min<int64_t>(first * per_rank_batch, indices.size()));
    loader.start_epoch(std::move(indices), epoch);
    train::Progress progress(o.progress && lead, epoch, o.epochs, steps_per_epoch);
    int64_t b = first;
    double metric_loss = 0;
    int64_t metric_correct = 0, metric_samples = 0;
    for (; b < steps_per_epoch && !(o.test && optimizer->steps() >= o.test_nsteps); ++b) {
      chrono.start(train::Phase::kLoad);
      const auto load_start = Clock::now();
      const Batch host = loader.next();
      if (run_steps == 0) {
        result.first_batch_ms =
            1e3 * std::chrono::duration<double>(Clock::now() - load_start).count();
      }
      const Tensor images = prepare_images(host.images, device, o);
      const Tensor labels = host.labels.to(device);
      chrono.start(train::Phase::kForward);
      Tensor logits;
      CrossEntropyOutput loss;
      {
        nn::Autocast autocast(o.amp_dtype, o.amp);
        nn::SyncBatchNormScope sync_bn(dist::sync_batch_norm(comm), o.sync_bn);
        logits = model->forward(images);
        loss = softmax_cross_entropy(logits, labels, o.label_smoothing);
      }
      chrono.start(train::Phase::kBackward);
      {
        nn::Autocast autocast(o.amp_dtype, o.amp);
        model->zero_grad();
        model->backward(
            softmax_cross_entropy_backward(loss, labels, o.label_smoothing, logits.dtype()));
      }
      if (ddp) {
        ddp->finish_backward();
      } else {
        const auto start = Clock::now();
        allreduce_gradients(params, *comm);
        naive_sync_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      }
      chrono.start(train::Phase::kOptimizer);
      optimizer->set_lr(lr_at(optimizer->steps()));
      optimizer->step();
      chrono.end_step(result.global_batch);
      const float step_loss = loss.host_loss();
      COURSE_CHECK(std::isfinite(step_loss), "the training loss diverged (", step_loss,
                   ") at step ", optimizer->steps(), ": lower --lr");
      metric_loss += step_loss * labels.numel();
      metric_correct += train::count_correct(logits, labels);
      metric_samples += labels.numel();
      ++run_steps;
      if (optimizer->steps() % o.metric_step == 0) {
        const std::vector<float> sums = dist::allreduce_sum(
            {static_cast<float>(metric_loss), static_cast<float>(metric_correct),
             static_cast<float>(metric_samples)},
            *comm);
        if (lead) {
          append_metrics(o.metrics, {{"step", optimizer->steps()},
                                     {"images", optimizer->steps() * result.global_batch},
                                     {"train_loss", sums[0] / sums[2]},
                                     {"train_accuracy", sums[1] / sums[2]},
                                     {"lr", optimizer->lr()}});
          std::fprintf(
              stderr,
              "step %lld: training loss %.4f, accuracy %.2f%% (all ranks, last %lld steps)\n",
              static_cast<long long>(optimizer->steps()), sums[0] / sums[2],
              100 * sums[1] / sums[2], static_cast<long long>(o.metric_step));
        }
        metric_loss = 0;
        metric_correct = metric_samples = 0;
      }
      result.last_loss = step_loss;
      progress.update(b + 1, step_loss);
      if (const int signal = agreed_stop_signal(*comm)) {
        save(epoch, b + 1);
        comm->barrier();  // the checkpoint is complete before any rank exits
        train::stop_training(signal, optimizer->steps(), o.chkpt);
      }
    }
    result.last_loss = dist::allreduce_sum({result.last_loss}, *comm)[0] / comm->size();
    if (o.test) {
      save(epoch, b);
      break;
    }
    save(epoch + 1, 0);
    const train::EvalTally v = validate_model(*model, data, o, device, *comm);
    result.test_accuracy = v.accuracy();
    if (lead) {
      std::printf("epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n",
                  static_cast<long long>(epoch + 1), result.last_loss, v.loss(),
                  100 * v.accuracy());
      append_metrics(o.metrics, {{"epoch", epoch + 1},
                                 {"step", optimizer->steps()},
                                 {"images", optimizer->steps() * result.global_batch},
                                 {"ranks", comm->size()},
                                 {"global_batch", result.global_batch},
                                 {"train_loss", result.last_loss},
                                 {"test_loss", v.loss()},
                                 {"test_accuracy", v.accuracy()},
                                 {"lr", optimizer->lr()}});
    }
  }
  result.steps = run_steps;
  result.timing = chrono.report();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  result.host_memory_peak_mib = usage.ru_maxrss / 1024.0;  // kilobytes on Linux
  if (ddp) {
    const dist::DdpStats& s = ddp->stats();
    result.sync_bytes_per_step = s.steps ? s.bytes / s.steps : 0;
    result.exposed_sync_ms_per_step = s.steps ? 1e3 * s.exposed_seconds / s.steps : 0;
  } else {
    for (const nn::Parameter* p : params)
      result.sync_bytes_per_step += static_cast<int64_t>(p->grad.nbytes());
    result.exposed_sync_ms_per_step = run_steps ? 1e3 * naive_sync_seconds / run_steps : 0;
  }
  if (lead) {
    std::printf("%s", result.timing.table().c_str());
    std::printf("first batch          %.2f ms (DataLoader start-up)\n", result.first_batch_ms);
    std::printf("host memory peak     %.1f MiB (resident, rank 0)\n", result.host_memory_peak_mib);
    std::printf("gradient sync        %.2f MiB per step, %.2f ms per step exposed after backward\n",
                result.sync_bytes_per_step / 1048576.0, result.exposed_sync_ms_per_step);
    const int64_t skipped = loader.skipped_samples();
    if (skipped > 0)
      std::printf("skipped %lld unreadable image(s) on rank 0\n", static_cast<long long>(skipped));
  }
  for (nn::Parameter* p : params) result.parameters.push_back(p->value.to_vector<float>());
  return result;
}

}  // namespace day2
