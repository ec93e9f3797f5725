// The shared training loop: its steps, epochs, checkpoints and stops (what it reports after
// an epoch and at the end is in training_loop_reports.cc).
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
#include "common/parallel/comm/rank_setup.h"
#include "common/parallel/data_parallel/ddp.h"
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
      per_rank_files() ? rank_file(flags_.resume, rank, ranks) : flags_.resume;
  const nlohmann::json header = per_rank_files() ? read_rank_file_header(flags_.resume, rank, ranks)
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
  load_checkpoint(resume, checkpointed());
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

bool TrainingLoop::per_rank_files() const {
  return config_.rank_state || config_.optimizer->keeps_rank_state();
}

NamedTensors TrainingLoop::checkpointed() const {
  NamedTensors state = config_.rank_state ? config_.rank_state()
                                          : training_state(*config_.model, *config_.optimizer);
  if (config_.scaler)
    state.emplace_back("loss_scaler.state", &config_.scaler->state(config_.device));
  return state;
}

void TrainingLoop::save(int64_t epoch, int64_t batch) {
  if (flags_.chkpt.empty() || (!lead() && !per_rank_files())) return;
  nlohmann::json header = config_.identity;
  header["epoch"] = epoch;
  header["batch"] = batch;
  header["step"] = config_.optimizer->steps();
  if (!per_rank_files()) {
    save_checkpoint(flags_.chkpt, checkpointed(), header);
    return;
  }
  const int rank = config_.comm ? config_.comm->rank() : 0;
  const int ranks = config_.comm ? config_.comm->size() : 1;
  save_checkpoint(rank_file(flags_.chkpt, rank, ranks), checkpointed(),
                  with_rank_header(header, rank, ranks));
  if (config_.comm) config_.comm->barrier();  // the checkpoint exists once every file does
}

int TrainingLoop::agreed_stop() const {
  return config_.comm ? parallel::agree_on_stop(stop_signal(), *config_.comm) : stop_signal();
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
    result.replayed_steps += phases.replayed();
    ++epoch_steps.steps;
    const bool last = b + 1 == config_.steps_per_epoch ||
                      (flags_.test && optimizer.steps() >= flags_.test_nsteps);
    const bool read_now = hooks_.after_step || optimizer.steps() % flags_.log_every == 0 || last;
    const auto read_and_show = [&] {
      progress.update(b + 1, read_losses(losses, epoch_steps, result, chrono));
    };
    if (read_now) read_and_show();
    const int signal = agreed_stop();
    if (signal && !read_now) read_and_show();
    if (signal) {
      save(epoch, b + 1);
      if (config_.comm) config_.comm->barrier();  // the checkpoint is whole before any exit
      stop_training(signal, optimizer.steps(), flags_.chkpt);
    }
  }
  return b;
}

// The host waits for the device only here: every --log-every steps, at the epoch's end, at a
// stop, and every step for a hook that wants each step's loss.
float TrainingLoop::read_losses(LossWindow& losses, EpochSteps& epoch_steps, LoopResult& result,
                                Chronometer& chrono) {
  const optim::Optimizer& optimizer = *config_.optimizer;
  const HostWaits before_read = host_waits();
  chrono.collect();
  log_gradient_norm(epoch_steps);
  const LossWindow::Reading read = losses.read();
  if (!std::isfinite(read.last) || !std::isfinite(read.sum)) {
    throw TrainingDiverged(detail::concat("the training loss diverged (", read.last, ") by step ",
                                          optimizer.steps(), ": lower --lr"));
  }
  result.last_loss = read.last;
  energy_->read();  // often enough for RAPL's counters to wrap at most once between reads
  epoch_steps.loss_sum += read.sum;
  if (events_) {
    events_->add_scalar("train/loss", static_cast<float>(read.sum / read.steps), optimizer.steps());
    events_->add_scalar("train/lr", optimizer.lr(), optimizer.steps());
  }
  result.read_waits += host_waits() - before_read;
  if (flags_.wall_clock_breakdown && lead() && optimizer.steps() % flags_.log_every == 0) {
    const ChronometerReport now = chrono.report();
    std::printf("step %lld %s\n", static_cast<long long>(optimizer.steps()),
                now.breakdown_since(last_breakdown_).c_str());
    last_breakdown_ = now;
  }
  if (hooks_.after_step) hooks_.after_step(optimizer.steps(), read.last);
  return read.last;
}

void TrainingLoop::average_over_ranks(EpochSteps& epoch_steps, LoopResult& result) const {
  if (!config_.comm) return;
  const std::vector<float> means = parallel::allreduce_sum(
      {result.last_loss, static_cast<float>(epoch_steps.loss_sum)}, *config_.comm);
  result.last_loss = means[0] / static_cast<float>(config_.comm->size());
  epoch_steps.loss_sum = means[1] / config_.comm->size();
}

}  // namespace course::train
