// What the shared training loop reports: after an epoch its validation, metrics records and
// TensorBoard scalars; at the end of a run the timing table, energy, clipping, the host's waits
// and the profile.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/parallel/data_parallel/ddp.h"
#include "common/tensor/allocator.h"
#include "common/train/training_loop.h"

namespace course::train {

void TrainingLoop::report_host_waits(const LoopResult& result) const {
  if (!config_.device.is_accelerator() || result.steps < 2) return;
  int64_t most = result.step_waits.total();
  if (config_.comm && config_.comm->size() > 1) {
    Tensor on_ranks = Tensor::from_vector<int64_t>({most}, {1});
    config_.comm->allreduce(on_ranks, parallel::ReduceOp::kMax)->wait();
    most = on_ranks.to_vector<int64_t>()[0];
  }
  if (!lead()) return;
  std::printf(
      "host waits for %s in steps 2..%lld: %lld at most on a rank (rank 0: %s); in the "
      "loss reads: %s\n",
      config_.device.str().c_str(), static_cast<long long>(result.steps),
      static_cast<long long>(most), result.step_waits.str().c_str(),
      result.read_waits.str().c_str());
}

namespace {

EvalTally summed_over_ranks(const EvalTally& t, parallel::Communicator* comm) {
  if (!comm) return t;
  const std::vector<float> sums =
      parallel::allreduce_sum({static_cast<float>(t.correct), static_cast<float>(t.loss_sum),
                               static_cast<float>(t.samples)},
                              *comm);
  return {static_cast<int64_t>(sums[0]), sums[1], static_cast<int64_t>(sums[2])};
}

}  // namespace

double TrainingLoop::elapsed_s() const {
  return resumed_elapsed_s_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - run_started_).count();
}

EnergyReading TrainingLoop::energy_over_ranks() {
  EnergyReading reading = energy_->read();
  if (!config_.comm || config_.comm->size() == 1) return reading;
  const std::vector<float> sums = parallel::allreduce_sum(
      {static_cast<float>(reading.gpu_joules.value_or(0)), reading.gpu_joules ? 1.0f : 0.0f,
       static_cast<float>(reading.core_hours), static_cast<float>(reading.gpu_hours)},
      *config_.comm);
  if (reading.gpu_joules && sums[1] == static_cast<float>(config_.comm->size())) {
    reading.gpu_joules = sums[0];
  } else {
    reading.gpu_joules.reset();  // not every rank's GPU was measured
  }
  reading.core_hours = sums[2];
  reading.gpu_hours = sums[3];
  return reading;
}

bool TrainingLoop::finish_epoch(int64_t epoch, const EpochSteps& steps, LoopResult& result) {
  const auto validation_started = std::chrono::steady_clock::now();
  const EvalTally v = summed_over_ranks(hooks_.validate(), config_.comm);
  const double validation_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - validation_started).count();
  std::optional<EvalTally> training;
  if (hooks_.epoch_training_tally) {
    training = summed_over_ranks(hooks_.epoch_training_tally(), config_.comm);
  }
  result.test_accuracy = v.accuracy();
  result.test_loss = v.loss();
  const EnergyReading energy = energy_over_ranks();
  if (events_) {
    const int64_t step = config_.optimizer->steps();
    events_->add_scalar("test/loss", static_cast<float>(v.loss()), step);
    events_->add_scalar("test/accuracy", static_cast<float>(v.accuracy()), step);
    events_->add_scalar("time/elapsed_s", static_cast<float>(elapsed_s()), step);
    if (training) {
      events_->add_scalar("train/accuracy", static_cast<float>(training->accuracy()), step);
    }
    events_->add_scalar(
        "perf/" + config_.unit + "_per_second",
        static_cast<float>(static_cast<double>(steps.steps * config_.global_batch) / steps.seconds),
        step);
    events_->flush();
  }
  const bool go_on = !hooks_.after_epoch || hooks_.after_epoch(epoch + 1, v);
  if (!lead()) return go_on;
  std::printf("epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n",
              static_cast<long long>(epoch + 1), result.last_loss, v.loss(), 100 * v.accuracy());
  std::fflush(stdout);
  if (!flags_.metrics.empty()) {
    write_metrics(epoch, steps, result, v, training, validation_s, energy);
  }
  return go_on;
}

void TrainingLoop::write_metrics(int64_t epoch, const EpochSteps& steps, const LoopResult& result,
                                 const EvalTally& validation, std::optional<EvalTally> training,
                                 double validation_s, const EnergyReading& energy) const {
  const int64_t step = config_.optimizer->steps();
  nlohmann::json record{
      {"epoch", epoch + 1},
      {"step", step},
      {config_.unit, step * config_.global_batch},
      {"ranks", config_.comm ? config_.comm->size() : 1},
      {"global_batch", config_.global_batch},
      {"train_loss", result.last_loss},
      {"train_loss_mean", steps.steps ? steps.loss_sum / static_cast<double>(steps.steps) : 0.0},
      {"test_loss", validation.loss()},
      {"test_accuracy", validation.accuracy()},
      {"lr", config_.optimizer->lr()},
      {config_.unit + "_per_second",
       static_cast<double>(steps.steps * config_.global_batch) / steps.seconds},
      {"epoch_s", steps.seconds},
      {"validation_s", validation_s},
      {"elapsed_s", elapsed_s()},
      {"peak_memory_bytes", device_allocator(config_.device).stats().peak_allocated},
      {"energy_cpu_j", energy.cpu_joules ? nlohmann::json(*energy.cpu_joules) : nullptr},
      {"energy_gpu_j", energy.gpu_joules ? nlohmann::json(*energy.gpu_joules) : nullptr},
      {"core_hours", energy.core_hours},
      {"gpu_hours", energy.gpu_hours}};
  if (training) record["train_accuracy"] = training->accuracy();
  if (config_.clipping && config_.clipping->last_norm()) {
    record["grad_norm"] = *config_.clipping->last_norm();
    record["grad_norm_max"] = steps.largest_gradient_norm;
  }
  std::ofstream(flags_.metrics, std::ios::app) << record.dump() << "\n";
}

void TrainingLoop::log_gradient_norm(EpochSteps& steps) {
  if (!config_.clipping || !config_.clipping->on()) return;
  const std::vector<float> norms = config_.clipping->take_norms();
  const int64_t first_step = config_.optimizer->steps() - static_cast<int64_t>(norms.size()) + 1;
  for (size_t i = 0; i < norms.size(); ++i) {
    if (std::isfinite(norms[i]))
      steps.largest_gradient_norm = std::max(steps.largest_gradient_norm, norms[i]);
    if (events_) {
      events_->add_scalar("train/grad_norm", norms[i], first_step + static_cast<int64_t>(i));
    }
  }
}

void TrainingLoop::report_run(LoopResult& result, Chronometer& chrono, Profiler& profiler) {
  result.timing = chrono.report();
  if (lead()) std::printf("%s", result.timing.table().c_str());
  const EnergyReading energy = energy_over_ranks();
  if (lead()) {
    std::printf("%s\n", describe_energy(energy).c_str());
    for (const std::string& why : energy_->unmeasured()) std::printf("  %s\n", why.c_str());
  }
  if (lead() && config_.clipping && config_.clipping->on()) {
    std::printf("%s\n", config_.clipping->describe().c_str());
  }
  report_host_waits(result);
  if (profiler.enabled()) {
    profiler.write(flags_.profile, config_.comm);  // every rank's events in one file
    if (lead()) {
      std::printf("profile: %zu events%s written to %s (open in https://ui.perfetto.dev)\n",
                  profiler.event_count(),
                  config_.comm && config_.comm->size() > 1 ? " per rank" : "",
                  flags_.profile.c_str());
    }
  }
}

}  // namespace course::train
