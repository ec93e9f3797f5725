// The day-4 runs' shared start and loop (lab_run.h).
#include "day4_large_models/lab_run.h"

#include "common/parallel/comm/rank_setup.h"
#include "common/train/loss_scaling.h"
#include "day4_large_models/memory_report.h"
#include "day4_large_models/pipeline_report.h"
#include "day4_large_models/throughput_report.h"

namespace day4 {

using namespace course;

namespace {

// --throughput-megatron: Megatron-LM's rows; --throughput-gpus: the throughput model's grids;
// --estimate-only: the memory estimate for --estimate-ranks (0: the run's ranks).
void print_figures(const GptLabOptions& o, int ranks, const EstimateFor& estimate_for) {
  if (!o.estimate.throughput_megatron.empty())
    return print_megatron_rows(o.estimate.throughput_megatron);
  if (o.estimate.throughput_gpus > 0) {
    print_throughput_table(o.model, o.run.batch_size, o.grid.context_parallel,
                           o.estimate.throughput_gpus);
    return;
  }
  const int estimated = o.estimate.estimate_ranks > 0 ? o.estimate.estimate_ranks : ranks;
  validate_grid_ranks(o.grid, estimated, o.estimate.estimate_ranks > 0);
  const EstimatedRun run = estimate_for(estimated);
  print_memory_estimate(o, estimated, run.estimate, run.parameters);
}

}  // namespace

std::optional<LabStart> start_lab_run(GptLabOptions& o, const EstimateFor& estimate_for) {
  auto comm = parallel::Communicator::world();
  validate_on_every_rank(o, comm->size());
  const Device device = parallel::set_up_rank(*comm, o.comm_timeout, o.run.device);
  if (o.estimate.figures_only()) {
    if (comm->rank() == 0) print_figures(o, comm->size(), estimate_for);
    return std::nullopt;
  }
  validate_run_ranks(o.data_parallel, comm->size());
  return LabStart{.comm = std::move(comm), .device = device};
}

std::optional<parallel::MemoryEstimate> checked_estimate(const GptLabOptions& o, int ranks,
                                                         Device device, bool estimated,
                                                         const EstimateFor& estimate_for) {
  if (!estimated) return std::nullopt;
  const parallel::MemoryEstimate estimate = estimate_for(ranks).estimate;
  enforce_memory_budget(o, ranks, estimate, device);
  return estimate;
}

train::LoopResult run_lab_loop(const GptLabOptions& o, const LabRunParts& parts,
                               const std::shared_ptr<parallel::Communicator>& comm) {
  parallel::TrainingParallelism& parallelism = *parts.parallelism;
  LabOptimizer optimizer = make_lab_optimizer(o.optimizer, o.run, parallelism, comm,
                                              o.run.epochs * parts.steps_per_epoch);
  optim::GradientClipping clipping(o.run.clip_grad_norm);
  const nlohmann::json layout = parallelism.checkpoint_layout();
  nlohmann::json identity = parts.identity;
  identity.update(layout);
  train::TrainingLoop loop(
      o.run,
      {.device = parts.device,
       .model = parts.model,
       .optimizer = optimizer.optimizer.get(),
       .lr_at = [&](int64_t step) { return optimizer.schedule->lr_at(step); },
       .steps_per_epoch = parts.steps_per_epoch,
       .global_batch = parts.global_batch,
       .unit = parts.unit,
       .flops_per_unit = parts.flops_per_unit,
       .identity = identity,
       .comm = comm.get(),
       .rank_state = checkpoint_rank_state(layout, parallelism, *optimizer.optimizer),
       .clipping = &clipping,
       .scaler = optimizer.scaler.get()},
      parts.hooks(optimizer, clipping));
  // A resumed run loaded its shards: the modes that keep full values (ZeRO-1 and 2) refresh
  // them, as after an optimizer step, before the first forward uses them.
  if (!o.run.resume.empty()) parallelism.after_step();
  const bool lead = comm->rank() == 0;
  if (lead) {
    if (parts.estimate) print_memory_estimate(o, comm->size(), *parts.estimate, parts.parameters);
    parts.print_header();
  }
  const train::LoopResult run = loop.run();
  train::print_loss_scaling(optimizer.scaler.get(), lead);
  print_parallel_reports(parallelism, run, o.model.name, o.grid.pipeline.timeline, lead,
                         comm->size());
  if (lead) print_measured_against_estimate(parts.estimate, parts.device, run, parts.resident);
  return run;
}

}  // namespace day4
