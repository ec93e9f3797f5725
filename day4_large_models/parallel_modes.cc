// Choosing the lab's parallelism; ZeRO-1 from the exercises.
#include "day4_large_models/parallel_modes.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "common/kernels/elementwise.h"
#include "common/nn/sequential.h"
#include "common/optim/gradient_clipping.h"
#include "common/parallel/data_parallel/gradient_average.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"
#include "common/parallel/data_parallel_training.h"
#include "common/parallel/gradient_clipping.h"
#include "common/parallel/model_parallel_training.h"
#include "common/tensor/device_timer.h"
#include "common/train/loss_scaling.h"
#include "day4_large_models/exercises.h"
#include "day4_large_models/pipeline_exercises.h"

namespace day4 {

using namespace course;

namespace {

// Rank 0's values broadcast; this rank's shard of them (TP4.1), with a zero gradient.
nn::Parameter take_shard(nn::FlatParameters& flat, parallel::Communicator& comm) {
  comm.broadcast(flat.values(), 0)->wait();
  const nn::FlatRange mine = shard_of(flat.numel(), comm.rank(), comm.size());
  COURSE_CHECK(mine.begin >= 0 && mine.end <= flat.padded_numel() &&
                   mine.size() * comm.size() == flat.padded_numel(),
               "TP4.1: shard_of(", flat.numel(), ", ", comm.rank(), ", ", comm.size(), ") = [",
               mine.begin, ", ", mine.end, ") is not an equal shard of the padded buffer of ",
               flat.padded_numel(), " elements");
  return nn::Parameter(flat.values().slice(mine.begin, mine.end).clone(),
                       zeros({mine.size()}, DType::kF32, flat.device()));
}

// Every parameter a view into one flat buffer; this rank's optimizer updates the shard TP4.1
// gives it. After backward TP4.2 turns the full gradients into the shard's averaged gradient;
// after the optimizer's step TP4.3 gathers the updated shards into the full values.
class ExerciseZero1 : public parallel::DataParallelStep {
 public:
  ExerciseZero1(nn::Module& model, std::shared_ptr<parallel::Communicator> comm)
      : model_(model),
        comm_(std::move(comm)),
        flat_(model.parameters(), comm_->size()),
        shard_(take_shard(flat_, *comm_)) {}

  nn::Module& net() override { return model_; }
  std::vector<std::pair<std::string, nn::Parameter*>> optimized() override {
    return {{"zero1.shard", &shard_}};
  }
  void set_sync(bool) override {}  // micro-batches add into the full gradients
  void finish_backward() override {
    timed([&] { reduce_scatter_mean(flat_.grads(), shard_.grad, *comm_); });
  }
  void after_step() override {
    timed([&] { all_gather_shards(shard_.value, flat_.values(), *comm_); });
  }
  int shard_group_size() const override { return comm_->size(); }
  // The exercises' collectives are blocking: all of their time is exposed.
  double exposed_communication_seconds() override { return waits_.total_seconds(); }
  double bytes_sent() const override { return comm_->traffic().bytes; }
  Tensor squared_gradient_norm() override {
    return parallel::sum_over_ranks(optim::squared_gradient_sum({&shard_}), *comm_);
  }
  std::string mode_name() const override { return kExerciseZero1; }
  std::string describe() const override {
    return "your ZeRO-1 (TP4.1-TP4.3) over " + std::to_string(comm_->size()) + " rank(s)";
  }

 private:
  nn::Module& model_;
  std::shared_ptr<parallel::Communicator> comm_;
  nn::FlatParameters flat_;
  nn::Parameter shard_;
  IntervalTimer waits_{process_device()};

  template <class F>
  void timed(F&& run) {
    waits_.start();
    run();
    waits_.stop();
  }
};

// Autocast's dtype for the forward passes (none: f32).
std::optional<DType> compute_dtype(const train::RunFlags& run) {
  return run.amp ? std::optional(run.amp_dtype) : std::nullopt;
}

parallel::ModelParallelOptions model_parallel_options(const GridChoice& grid,
                                                      const train::RunFlags& run) {
  const PipelineChoice& pipeline = grid.pipeline;
  return {.tensor_parallel = grid.tensor_parallel,
          .sequence_parallel = grid.sequence_parallel,
          .context_parallel = grid.context_parallel,
          .pipeline_stages = pipeline.stages,
          .pipeline = {.schedule = pipeline.schedule,
                       .micro_batches = pipeline.stages > 1 ? pipeline.micro_batches
                                                            : static_cast<int>(run.accumulate),
                       .balance = pipeline.balance,
                       .virtual_stages = pipeline.virtual_stages,
                       .hooks = pipeline.exercises ? pipeline_exercise_hooks()
                                                   : parallel::PipelineHooks{}},
          .compute = compute_dtype(run)};
}

}  // namespace

std::unique_ptr<parallel::TrainingParallelism> make_parallelism(
    nn::Gpt& model, std::shared_ptr<parallel::Communicator> comm, const ParallelismChoice& c) {
  if (c.grid.model_parallel()) {
    return std::make_unique<parallel::ModelParallelTraining>(model, comm,
                                                             model_parallel_options(c.grid, c.run));
  }
  std::unique_ptr<parallel::DataParallelStep> step;
  if (c.data_parallel.trainee_zero1) {
    step = std::make_unique<ExerciseZero1>(model, comm);
  } else {
    step = std::make_unique<parallel::DataParallelModel>(model, model.blocks(), comm,
                                                         c.data_parallel.library_options());
  }
  return std::make_unique<parallel::DataParallelTraining>(
      std::move(step), comm, static_cast<int>(c.run.accumulate), compute_dtype(c.run));
}

std::unique_ptr<parallel::TrainingParallelism> make_image_parallelism(
    nn::Module& model, const Tensor& sample, std::shared_ptr<parallel::Communicator> comm,
    const ParallelismChoice& c) {
  if (c.grid.model_parallel()) {
    return std::make_unique<parallel::ModelParallelTraining>(model, sample, comm,
                                                             model_parallel_options(c.grid, c.run));
  }
  return std::make_unique<parallel::DataParallelTraining>(
      std::make_unique<parallel::DataParallelModel>(
          model, dynamic_cast<nn::Sequential&>(model.child("blocks")), comm,
          c.data_parallel.library_options()),
      comm, static_cast<int>(c.run.accumulate), compute_dtype(c.run));
}

namespace {

// The scaler checks the gradients where the optimizer steps them: on the host under ZeRO-Offload
// (as DeepSpeed checks its CPU Adam's gradients), so its step never waits for a device flag.
void keep_scaler_with_gradients(optim::LossScaler& scaler,
                                parallel::TrainingParallelism& parallelism) {
  const std::vector<nn::Parameter*> params = parallel::optimized_parameters(parallelism);
  if (params.empty()) return;
  const Device home = params.front()->value.device();
  for (const nn::Parameter* p : params) {
    COURSE_CHECK(p->value.device() == home,
                 "f16's loss scaler checks every gradient in one place; "
                 "this rank steps parameters on ",
                 home.str(), " and on ", p->value.device().str());
  }
  scaler.keep_state_on(home);
}

}  // namespace

LabOptimizer make_lab_optimizer(const OptimizerChoice& o, const train::RunFlags& run,
                                parallel::TrainingParallelism& parallelism,
                                std::shared_ptr<parallel::Communicator> comm, int64_t total_steps) {
  optim::OptimizerFlags flags = train::optimizer_flags(run, o.kind);
  flags.beta1 = o.beta1;
  flags.beta2 = o.beta2;
  flags.eps = o.eps;
  flags.freeze_step = o.freeze_step;
  flags.exp_avg_mask = o.exp_avg_mask;
  flags.onebit_lamb = o.onebit_lamb;
  if (o.exercise_onebit) flags.onebit_worker = onebit_compress;  // TP4.22
  const int64_t length = o.decay_steps > 0 ? o.decay_steps : total_steps;
  const float eta_min = o.schedule == optim::ScheduleKind::kCosine ? run.lr / 10 : 0.0f;
  const int64_t warmup = std::min(o.warmup_steps, length);  // a warm-up within the schedule
  const std::shared_ptr<parallel::Communicator> world = comm;
  LabOptimizer lab{.optimizer = parallel::make_parallel_optimizer(
                       flags, parallelism.optimized(), std::move(comm),
                       [&](std::function<bool()> local) {
                         parallelism.keep_gradients_local_while(std::move(local));
                       }),
                   .schedule = optim::make_schedule(o.schedule, run.lr, length, warmup, eta_min,
                                                    o.warmup_shape)};
  if (o.in_backward) {
    lab.in_backward = std::make_unique<parallel::OptimizerInBackward>(*lab.optimizer, parallelism);
  }
  lab.scaler = train::make_loss_scaler(run);
  if (lab.scaler) {
    lab.world = world;
    keep_scaler_with_gradients(*lab.scaler, parallelism);
  }
  lab.overflow_drill = o.overflow_drill;
  return lab;
}

namespace {

// --overflow-drill: at its step, the last rank's first gradient row set to inf before the check,
// so that only that rank finds the overflow.
void drill_overflow(LabOptimizer& optimizer, const std::vector<nn::Parameter*>& params) {
  const parallel::Communicator& world = *optimizer.world;
  if (optimizer.drilled || optimizer.optimizer->steps() + 1 != optimizer.overflow_drill ||
      world.rank() != world.size() - 1) {
    return;
  }
  optimizer.drilled = true;
  for (nn::Parameter* p : params) {
    if (!p->grad.defined() || p->grad.numel() == 0) continue;
    Tensor row = p->grad.slice(0, 1);
    fill_(row, std::numeric_limits<double>::infinity());
    return;
  }
}

}  // namespace

LabStep::LabStep(LabOptimizer& optimizer, optim::GradientClipping& clipping,
                 parallel::TrainingParallelism& parallelism, Device device, bool cuda_graphs)
    : optimizer_(optimizer),
      clipping_(clipping),
      parallelism_(parallelism),
      device_(device),
      graph_(cuda_graphs ? captured_step(device) : std::nullopt) {
  if (cuda_graphs) train::note_graph_stand_in(device);
}

train::StepGraph::Step LabStep::graphed_step() {
  return [this](const Tensor& inputs, const Tensor& targets) {
    return passes_and_update({inputs, targets}, [](Phase) {});
  };
}

std::optional<train::StepGraph> LabStep::captured_step(Device device) {
  return std::optional<train::StepGraph>(std::in_place, device, graphed_step());
}

void LabStep::recapture_after_outside_use() {
  if (!graph_) return;
  graph_.reset();
  graph_.emplace(device_, graphed_step());
  eager_step_done_ = false;
}

Tensor LabStep::run(const NextTokenBatch& batch, train::StepPhases& phases) {
  if (graph_ && eager_step_done_ && graph_->fits(batch.inputs, batch.targets)) {
    phases.start(Phase::kGraphReplay);
    if (graph_->captured()) phases.note_replayed();
    optimizer_.optimizer->prepare_step();
    const Tensor loss = graph_->run(batch.inputs, batch.targets);
    optimizer_.optimizer->count_step();
    parallelism_.after_step();
    return loss;
  }
  const Tensor loss = passes_and_update(batch, [&phases](Phase phase) { phases.start(phase); });
  parallelism_.after_step();
  eager_step_done_ = true;
  return loss;
}

Tensor LabStep::passes_and_update(const NextTokenBatch& batch,
                                  const std::function<void(Phase)>& mark) {
  if (optimizer_.scaler) parallelism_.set_loss_scale(optimizer_.scaler->scale_tensor(device_));
  if (optimizer_.in_backward) return passes_updating_in_backward(batch, mark);
  Tensor loss = parallelism_.forward_backward(batch, mark);
  mark(Phase::kOptimizer);
  const Tensor skip_if = unscale_and_agree();
  parallel::apply_clipping(clipping_, parallelism_);  // the unscaled norm
  optimizer_.optimizer->step(skip_if);  // inside a capture: its update alone (optimizer.h)
  if (optimizer_.scaler) optimizer_.scaler->update();
  return loss;
}

Tensor LabStep::passes_updating_in_backward(const NextTokenBatch& batch,
                                            const std::function<void(Phase)>& mark) {
  parallel::OptimizerInBackward& fused = *optimizer_.in_backward;
  const auto passes = [&] { return parallelism_.forward_backward(batch, mark); };
  Tensor loss;
  if (optimizer_.scaler) {
    loss = fused.loss_scaled_step(
        passes, *optimizer_.scaler, optimizer_.world.get(),
        [this](const std::vector<nn::Parameter*>& group) { drill_overflow(optimizer_, group); });
  } else {
    fused.begin_step();
    loss = passes();
    fused.end_step();
  }
  mark(Phase::kOptimizer);
  return loss;
}

Tensor LabStep::unscale_and_agree() {
  if (!optimizer_.scaler) return Tensor();
  const std::vector<nn::Parameter*> params = parallel::optimized_parameters(parallelism_);
  drill_overflow(optimizer_, params);
  return train::unscale_and_agree(*optimizer_.scaler, params, optimizer_.world.get());
}

std::function<train::NamedTensors()> checkpoint_rank_state(
    const nlohmann::json& layout, parallel::TrainingParallelism& parallelism,
    optim::Optimizer& optimizer) {
  if (layout.empty()) return {};
  return [&parallelism, &optimizer] {
    return train::sharded_training_state(parallelism.optimized(), optimizer);
  };
}

}  // namespace day4
