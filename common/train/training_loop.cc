// The shared training loop.
#include "common/train/training_loop.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/kernels/math_mode.h"
#include "common/parallel/ddp.h"
#include "common/parallel/rank_setup.h"
#include "common/tensor/allocator.h"
#include "common/train/checkpoint.h"
#include "common/train/loss_window.h"
#include "common/train/progress.h"
#include "common/train/stop_signal.h"

namespace course::train {

namespace {

// torch.profiler.schedule(wait=1, warmup=1, active=12), the course's.
bool course_profile_schedule(int64_t run_step) { return run_step >= 2 && run_step < 14; }

std::string json_value(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

void check_output_path(const char* flag, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  std::error_code error;
  COURSE_CHECK(fs::is_directory(folder, error), flag, " ", path, ": folder ", folder.string(),
               " does not exist");
  COURSE_CHECK(access(folder.c_str(), W_OK) == 0, flag, " ", path, ": folder ", folder.string(),
               " is not writable");
  COURSE_CHECK(!fs::is_directory(path, error), flag, " ", path, " is a folder, not a file");
}

void check_output_flags(const RunFlags& flags) {
  for (const auto& [flag, path] :
       {std::pair{"--chkpt", &flags.chkpt}, std::pair{"--metrics", &flags.metrics},
        std::pair{"--profile", &flags.profile}}) {
    if (!path->empty()) check_output_path(flag, *path);
  }
  if (!flags.chkpt.empty()) check_overwritable("--chkpt", flags.chkpt);
}

namespace {

// The run's settings for TensorBoard's text tab: the shared flags, then the lab's own lines.
std::string settings_markdown(const RunFlags& f, const LoopConfig& config) {
  std::ostringstream text;
  text << "| setting | value |\n| --- | --- |\n"
       << "| model | " << config.identity.value("model", f.model) << " |\n"
       << "| batch (global) | " << config.global_batch << " " << config.unit << " |\n"
       << "| ranks | " << (config.comm ? config.comm->size() : 1) << " |\n"
       << "| epochs | " << f.epochs << " |\n| lr | " << f.lr << " |\n| wd | " << f.wd
       << " |\n| mom | " << f.mom << " |\n| label smoothing | " << f.label_smoothing
       << " |\n| amp | " << (f.amp ? std::string(dtype_name(f.amp_dtype)) : std::string("off"))
       << " |\n"
       << "| channels-last | " << (f.channels_last ? "on" : "off") << " |\n";
  if (!config.recipe.empty()) text << "\n" << config.recipe << "\n";
  return text.str();
}

// The elapsed seconds of a metrics file's last epoch record (0 without one).
double last_elapsed_s(const std::string& metrics) {
  std::ifstream in(metrics);
  double elapsed = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.contains("elapsed_s")) elapsed = record["elapsed_s"];
  }
  return elapsed;
}

}  // namespace

TrainingLoop::TrainingLoop(const RunFlags& flags, LoopConfig config, LoopHooks hooks)
    : flags_(flags), config_(std::move(config)), hooks_(std::move(hooks)) {
  COURSE_CHECK(config_.model && config_.optimizer && config_.lr_at && hooks_.start_epoch &&
                   hooks_.step && hooks_.validate,
               "a training loop needs a model, an optimizer, a schedule, a step and validation");
  COURSE_CHECK(config_.steps_per_epoch > 0, "an epoch of no steps");
  set_tf32_switches({.conv = flags_.tf32_conv, .matmul = flags_.tf32_matmul});
  if (!hooks_.profiled) hooks_.profiled = course_profile_schedule;
  check_output_flags(flags_);
  if (lead() && !flags_.logdir.empty()) {
    events_ = std::make_unique<EventFileWriter>(flags_.logdir);
    events_->add_text("settings", settings_markdown(flags_, config_), 0);
    events_->flush();
  }
  if (flags_.resume.empty()) return;
  const int rank = config_.comm ? config_.comm->rank() : 0;
  const int ranks = config_.comm ? config_.comm->size() : 1;
  const std::string resume =
      config_.rank_state ? rank_file(flags_.resume, rank, ranks) : flags_.resume;
  const nlohmann::json header = config_.rank_state
                                    ? read_rank_file_header(flags_.resume, rank, ranks)
                                    : read_checkpoint_header(flags_.resume);
  // The model first: a checkpoint of another model differs in everything after it too.
  std::vector<std::string> keys;
  if (config_.identity.contains("model")) keys.push_back("model");
  for (const auto& [key, value] : config_.identity.items()) {
    if (key != "model") keys.push_back(key);
  }
  for (const std::string& key : keys) {
    const nlohmann::json& value = config_.identity[key];
    COURSE_CHECK(header.contains(key) && header[key] == value, "checkpoint ", flags_.resume,
                 header.contains(key) ? " is of " + key + " " + json_value(header[key])
                                      : " records no " + key,
                 ", not ", json_value(value));
  }
  load_checkpoint(resume, config_.rank_state ? config_.rank_state()
                                             : training_state(*config_.model, *config_.optimizer));
  if (!flags_.metrics.empty()) resumed_elapsed_s_ = last_elapsed_s(flags_.metrics);
  start_epoch_ = header.value("epoch", int64_t{0});
  start_batch_ = header.value("batch", int64_t{0});
  config_.optimizer->set_steps(header.value("step", int64_t{0}));
  if (lead()) {
    std::printf("resumed from %s at epoch %lld, step %lld\n", flags_.resume.c_str(),
                static_cast<long long>(start_epoch_ + 1),
                static_cast<long long>(config_.optimizer->steps()));
  }
}

void TrainingLoop::save(int64_t epoch, int64_t batch) {
  if (flags_.chkpt.empty() || (!lead() && !config_.rank_state)) return;
  nlohmann::json header = config_.identity;
  header["epoch"] = epoch;
  header["batch"] = batch;
  header["step"] = config_.optimizer->steps();
  if (!config_.rank_state) {
    save_checkpoint(flags_.chkpt, training_state(*config_.model, *config_.optimizer), header);
    return;
  }
  const int rank = config_.comm ? config_.comm->rank() : 0;
  const int ranks = config_.comm ? config_.comm->size() : 1;
  save_checkpoint(rank_file(flags_.chkpt, rank, ranks), config_.rank_state(),
                  with_rank_header(header, rank, ranks));
  if (config_.comm) config_.comm->barrier();  // the checkpoint exists once every file does
}

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

int TrainingLoop::agreed_stop() const {
  return config_.comm ? parallel::agree_on_stop(stop_signal(), *config_.comm) : stop_signal();
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

LoopResult TrainingLoop::run() {
  run_started_ = std::chrono::steady_clock::now();
  energy_ = std::make_unique<EnergyMeter>(
      EnergySources{.device = config_.device, .cores = omp_get_max_threads()});
  const optim::Optimizer& optimizer = *config_.optimizer;
  LoopResult result;
  Chronometer chrono(config_.device, config_.unit, config_.flops_per_unit,
                     config_.comm ? config_.comm->size() : 1);
  Profiler profiler(config_.device, !flags_.profile.empty());
  for (int64_t epoch = start_epoch_; epoch < flags_.epochs; ++epoch) {
    const int64_t first = epoch == start_epoch_ ? start_batch_ : 0;
    hooks_.start_epoch(epoch, first);
    const auto epoch_started = std::chrono::steady_clock::now();
    EpochSteps epoch_steps;
    const int64_t b = run_steps(epoch, first, chrono, profiler, epoch_steps, result);
    epoch_steps.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_started).count();
    average_over_ranks(epoch_steps, result);
    if (flags_.test) {
      if (optimizer.steps() < flags_.test_nsteps && epoch + 1 < flags_.epochs) continue;
      save(epoch, b);
      break;
    }
    save(epoch + 1, 0);
    if (!finish_epoch(epoch, epoch_steps, result)) {
      result.ended_early = true;
      break;
    }
  }
  report_run(result, chrono, profiler);
  return result;
}

int64_t TrainingLoop::run_steps(int64_t epoch, int64_t first, Chronometer& chrono,
                                Profiler& profiler, EpochSteps& epoch_steps, LoopResult& result) {
  optim::Optimizer& optimizer = *config_.optimizer;
  Progress progress(flags_.progress && lead(), epoch, flags_.epochs, config_.steps_per_epoch);
  LossWindow losses(config_.device);
  int64_t b = first;
  for (; b < config_.steps_per_epoch && !(flags_.test && optimizer.steps() >= flags_.test_nsteps);
       ++b) {
    const bool recorded = profiler.enabled() && hooks_.profiled(result.steps);
    auto step_range = profiler.range("step", recorded);
    StepPhases phases(chrono, profiler, recorded);
    optimizer.set_lr(config_.lr_at(optimizer.steps()));
    const HostWaits before_step = host_waits();
    losses.add(hooks_.step(phases));
    phases.finish(config_.global_batch);
    if (result.steps > 0) result.step_waits += host_waits() - before_step;
    ++result.steps;
    ++epoch_steps.steps;
    // The host waits for the device only here: every --log-every steps, at the epoch's end,
    // at a stop, and every step for a hook that wants each step's loss.
    const auto read_losses = [&] {
      const HostWaits before_read = host_waits();
      chrono.collect();
      log_gradient_norm(epoch_steps);
      const LossWindow::Reading read = losses.read();
      if (!std::isfinite(read.last) || !std::isfinite(read.sum)) {
        throw TrainingDiverged(detail::concat("the training loss diverged (", read.last,
                                              ") by step ", optimizer.steps(), ": lower --lr"));
      }
      result.last_loss = read.last;
      energy_->read();  // often enough for RAPL's counters to wrap at most once between reads
      epoch_steps.loss_sum += read.sum;
      if (events_) {
        events_->add_scalar("train/loss", static_cast<float>(read.sum / read.steps),
                            optimizer.steps());
        events_->add_scalar("train/lr", optimizer.lr(), optimizer.steps());
      }
      result.read_waits += host_waits() - before_read;
      if (hooks_.after_step) hooks_.after_step(optimizer.steps(), read.last);
      progress.update(b + 1, read.last);
    };
    const bool last = b + 1 == config_.steps_per_epoch ||
                      (flags_.test && optimizer.steps() >= flags_.test_nsteps);
    const bool read_now = hooks_.after_step || optimizer.steps() % flags_.log_every == 0 || last;
    if (read_now) read_losses();
    const int signal = agreed_stop();
    if (signal && !read_now) read_losses();
    if (signal) {
      save(epoch, b + 1);
      if (config_.comm) config_.comm->barrier();  // the checkpoint is whole before any exit
      stop_training(signal, optimizer.steps(), flags_.chkpt);
    }
  }
  return b;
}

void TrainingLoop::average_over_ranks(EpochSteps& epoch_steps, LoopResult& result) const {
  if (!config_.comm) return;
  const std::vector<float> means = parallel::allreduce_sum(
      {result.last_loss, static_cast<float>(epoch_steps.loss_sum)}, *config_.comm);
  result.last_loss = means[0] / static_cast<float>(config_.comm->size());
  epoch_steps.loss_sum = means[1] / config_.comm->size();
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
