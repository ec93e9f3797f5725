// The one training run of every lab: a lab builds its data, model and optimizer, then hands the
// loop its step and a few hooks. The loop owns what every run needs:
//   - before the first step: the checkpoint, metrics and profile files can be written, the
//     resume file is a checkpoint of this model (same identity, names and shapes) and is loaded;
//   - epochs of steps (or --test-nsteps steps within --epochs, no validation), the learning rate of
//   every step, the
//     chronometer and the profiler's schedule, the progress line, a diverging loss refused;
//   - a stop signal (Slurm's SIGUSR1/SIGTERM) agreed by every rank, then a checkpoint and
//     exit 4 after the same step everywhere;
//   - at each epoch's end: a checkpoint, validation summed over the ranks, the epoch line and
//     a JSON line of metrics (losses, accuracies, rate, samples per second, the epoch's and the
//     run's seconds, peak device memory, the energy and core- and GPU-hours so far
//     (energy_meter.h), with --clip-grad-norm the gradient norm's last and largest);
//   - at the end: the timing table, the energy line (sources that cannot be read named once),
//     on an accelerator the host's waits for it in steps 2..N (none, in a wait-free step);
//   - with --logdir, TensorBoard's event file: the settings, each step's loss and rate (and
//     gradient norm with --clip-grad-norm), each epoch's test loss and accuracy and the
//     elapsed time.
// With a communicator, rank 0 alone prints and writes files.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/nn/module.h"
#include "common/optim/gradient_clipping.h"
#include "common/optim/loss_scaler.h"
#include "common/optim/optimizer.h"
#include "common/parallel/comm/communicator.h"
#include "common/tensor/host_waits.h"
#include "common/train/chronometer.h"
#include "common/train/energy_meter.h"
#include "common/train/event_file.h"
#include "common/train/lab_flags.h"
#include "common/train/step_phases.h"
#include "common/train/training_state.h"

namespace course::train {

class LossWindow;

// Thrown when a step's loss is not finite (a learning rate too high): a learning-rate sweep
// catches it, a lab reports it as any other error.
class TrainingDiverged : public Error {
 public:
  using Error::Error;
};

struct LoopHooks {
  // Before an epoch's first step: set the sampler's epoch and start the loader, skipping the
  // first `first_batch` batches (a resumed run continues mid-epoch).
  std::function<void(int64_t epoch, int64_t first_batch)> start_epoch;
  // One step: load, forward, backward, update (the loop has set the learning rate). Returns
  // this rank's mean loss as a (1,) tensor on the device.
  std::function<Tensor(StepPhases& phases)> step;
  // After each step (optional): e.g. periodic synchronised training metrics.
  std::function<void(int64_t optimizer_step, float loss)> after_step;
  // The end-of-epoch validation of this rank's share (the loop sums it over the ranks): for a
  // language model, samples are tokens and accuracy the next token's top-1.
  std::function<EvalTally()> validate;
  // Whether run step k (from 0) is profiled (optional: the course's wait 1, warm-up 1,
  // active 12).
  std::function<bool(int64_t run_step)> profiled;
  // After each epoch's validation (optional), on every rank with the summed tally: false ends
  // the run there (a pruned trial of a hyper-parameter search). Every rank must answer alike.
  std::function<bool(int64_t epoch, const EvalTally& validation)> after_epoch;
  // This rank's training predictions since start_epoch (optional; the loop sums them over the
  // ranks): the epoch's training accuracy in the metrics. Not for mixed (soft-target) batches.
  std::function<EvalTally()> epoch_training_tally;
};

struct LoopConfig {
  Device device;
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  std::function<float(int64_t step)> lr_at;  // the learning rate of optimizer step `step`
  int64_t steps_per_epoch = 0;
  int64_t global_batch = 0;     // samples per step over all ranks, counted in `unit`
  std::string unit = "images";  // or "tokens" for a language model
  // The model's training FLOPs per unit (model_flops.h's training_flops of a sample's forward,
  // divided by its units): the summary then reports TFLOP/s and MFU; 0: not reported.
  double flops_per_unit = 0;
  // What a checkpoint records and a resumed run must match ({"model": ..., ...}).
  nlohmann::json identity;
  parallel::Communicator* comm = nullptr;  // none: a single process
  // Sharded runs: every rank saves and resumes its own file (checkpoint.h's rank_file()) with
  // these tensors (sharded_training_state()); otherwise rank 0 saves the model's and
  // optimizer's training_state(), or, for an optimizer that keeps_rank_state(), every rank its
  // own file of them.
  std::function<NamedTensors()> rank_state;
  // What the lab adds to the run's settings in --logdir's text summary (Markdown lines).
  std::string recipe;
  // The step's clipping (--clip-grad-norm), when the lab's step applies one: the loop logs each
  // step's norm and prints the run's summary of them.
  optim::GradientClipping* clipping = nullptr;
  // f16's loss scaler, when the step has one: its state is checkpointed with the model's (in
  // every rank's file of a sharded run), so a resumed run keeps its scale and skipped steps.
  optim::LossScaler* scaler = nullptr;
};

struct LoopResult {
  int64_t steps = 0;           // optimizer steps taken by this run
  int64_t replayed_steps = 0;  // of which replays of a graph captured before (--cuda-graphs)
  float last_loss = 0;         // of the last step (mean over ranks at epoch ends)
  std::optional<double> test_accuracy;  // after the last epoch (not with --test)
  std::optional<double> test_loss;
  bool ended_early = false;  // after_epoch said to stop
  ChronometerReport timing;
  // The host's waits for the device (host_waits.h) in the steps after the run's first (which
  // sets up: allocations, library plans), and in the loss reads every --log-every steps (the
  // chronometer's collection with them); a step's own should be none.
  HostWaits step_waits;
  HostWaits read_waits;
};

class TrainingLoop {
 public:
  // Checks the output paths and loads --resume, so bad paths fail before any step.
  TrainingLoop(const RunFlags& flags, LoopConfig config, LoopHooks hooks);
  LoopResult run();

  bool lead() const { return config_.comm == nullptr || config_.comm->rank() == 0; }

 private:
  void save(int64_t epoch, int64_t batch);
  // Whether every rank saves and resumes its own file (rank_file()): a sharded run (rank_state),
  // or an optimizer whose state differs by rank (1-bit's errors); and the tensors checkpointed.
  bool per_rank_files() const;
  NamedTensors checkpointed() const;
  int agreed_stop() const;
  // Collective: on an accelerator, the step's and the loss reads' host waits (most over ranks).
  void report_host_waits(const LoopResult& result) const;
  // What an epoch's steps measured, for its metrics.
  struct EpochSteps {
    int64_t steps = 0;
    double loss_sum = 0;
    double seconds = 0;               // the steps' wall time, loading included
    float largest_gradient_norm = 0;  // with clipping
  };
  // The steps of `epoch` from batch `first` to the epoch's end, --test's last step or a stop (which
  // saves and exits); returns the batch they ended before.
  int64_t run_steps(int64_t epoch, int64_t first, Chronometer& chrono, Profiler& profiler,
                    EpochSteps& steps, LoopResult& result);
  // Reads the losses since the last read (the host waits here), checks them, logs them and
  // the gradient norms; returns the last step's loss.
  float read_losses(LossWindow& losses, EpochSteps& steps, LoopResult& result, Chronometer& chrono);
  // Collective: the epoch's last loss and loss sum averaged over the ranks.
  void average_over_ranks(EpochSteps& steps, LoopResult& result) const;
  // Validates, reports, and returns whether training goes on (after_epoch's answer).
  bool finish_epoch(int64_t epoch, const EpochSteps& steps, LoopResult& result);
  // The run's closing reports: the timing table, energy, clipping, host waits, the profile.
  void report_run(LoopResult& result, Chronometer& chrono, Profiler& profiler);
  void write_metrics(int64_t epoch, const EpochSteps& steps, const LoopResult& result,
                     const EvalTally& validation, std::optional<EvalTally> training,
                     double validation_s, const EnergyReading& energy) const;
  // Collective: the run's energy so far, the GPUs' energy and the hours summed over the ranks
  // (the CPU packages are rank 0's node's).
  EnergyReading energy_over_ranks();
  // Seconds since the run started; a resumed run goes on from its metrics' last record (the
  // steps after that record and before the stop are not counted).
  double elapsed_s() const;
  // With clipping on, at a read of the losses: the norms of the steps since the last read to
  // TensorBoard, and the epoch's largest.
  void log_gradient_norm(EpochSteps& steps);

  const RunFlags& flags_;
  LoopConfig config_;
  LoopHooks hooks_;
  int64_t start_epoch_ = 0, start_batch_ = 0;
  ChronometerReport last_breakdown_;         // --wall-clock-breakdown's previous line
  std::unique_ptr<EventFileWriter> events_;  // with --logdir, on the lead rank
  std::unique_ptr<EnergyMeter> energy_;      // while run() runs
  std::chrono::steady_clock::time_point run_started_;
  double resumed_elapsed_s_ = 0;
};

// Fails at once when the output file `path` of `flag` (--chkpt, --metrics, --profile) cannot be
// written: its folder does not exist or is not writable, or the path is a folder.
void check_output_path(const char* flag, const std::string& path);
// check_output_path for each output file the flags name (--chkpt, --metrics, --profile): a tool
// running several loops calls it before the first.
void check_output_flags(const RunFlags& flags);

}  // namespace course::train
