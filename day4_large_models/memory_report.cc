// Printing and enforcing the GPT lab's memory estimate.
#include "day4_large_models/memory_report.h"

#include <cstdio>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/tensor/allocator.h"

namespace day4 {

using namespace course;

parallel::StatePlan state_plan(optim::OptimizerKind optimizer, const DataParallelChoice& dp,
                               int ranks) {
  return {.optimizer = optimizer,
          .sharding = dp.held(),
          .ranks = ranks,
          .shard_group_size = dp.shard_group_size,
          .cpu_offload = dp.cpu_offload,
          .param_dtype = dp.param_dtype,
          .backward_prefetch = dp.backward_prefetch == parallel::BackwardPrefetch::kPre,
          .stage3_prefetch = stage3_budget(dp.communication),
          .persistence_threshold = dp.communication.persistence_threshold};
}

parallel::MemoryPlan memory_plan(const GptLabOptions& o, int ranks) {
  return {.model = *o.model.language,
          .batch = o.run.batch_size,
          .context = o.model.context,
          .compute = o.run.amp ? o.run.amp_dtype : DType::kF32,
          .checkpoint_activations = o.model.checkpoint_activations,
          .context_parallel = o.grid.context_parallel,
          .state = state_plan(o.optimizer.kind, o.data_parallel, ranks)};
}

namespace {

std::string run_name(const GptLabOptions& o, int ranks) {
  const bool replicated = o.data_parallel.replicated();
  const std::string mode =
      replicated ? (ranks > 1 ? "DDP" : "one process") : o.data_parallel.flag();
  return o.model.name + ", " + mode + " on " + std::to_string(ranks) + " rank(s), batch " +
         std::to_string(o.run.batch_size) + (o.run.amp ? ", 16-bit compute" : ", f32") +
         (o.data_parallel.param_dtype != DType::kF32
              ? ", " + std::string(dtype_name(o.data_parallel.param_dtype)) + " parameters"
              : "") +
         (o.model.checkpoint_activations ? ", checkpointed" : "") +
         (o.grid.context_parallel > 1
              ? ", windows cut over " + std::to_string(o.grid.context_parallel) + " context ranks"
              : "");
}

std::string parameter_count(int64_t psi) {
  char text[32];
  if (psi >= 1'000'000'000) {
    std::snprintf(text, sizeof(text), "%.2fB", psi / 1e9);
  } else {
    std::snprintf(text, sizeof(text), "%.2fM", psi / 1e6);
  }
  return text;
}

}  // namespace

parallel::ImageMemoryPlan image_memory_plan(const GptLabOptions& o, int ranks,
                                            const nn::ModelConfig& model) {
  return {.model = model,
          .batch = o.run.batch_size,
          .compute = o.run.amp ? o.run.amp_dtype : DType::kF32,
          .checkpoint_activations = o.model.checkpoint_activations,
          .state = state_plan(o.optimizer.kind, o.data_parallel, ranks)};
}

void print_memory_estimate(const GptLabOptions& o, int ranks,
                           const parallel::MemoryEstimate& estimate, int64_t psi) {
  std::printf("memory per rank, estimated (%s):\n%s", run_name(o, ranks).c_str(),
              parallel::describe(estimate).c_str());
  std::printf("  ZeRO paper, mixed-precision Adam, %s parameters on %d rank(s):",
              parameter_count(psi).c_str(), ranks);
  for (int stage = 0; stage <= 3; ++stage) {
    std::printf(" stage %d %s%s", stage,
                format_bytes(parallel::zero_paper_bytes(psi, stage, ranks)).c_str(),
                stage < 3 ? "," : "\n");
  }
  std::fflush(stdout);
}

void print_measured_against_estimate(const std::optional<parallel::MemoryEstimate>& estimate,
                                     Device device, const train::LoopResult& run,
                                     int64_t resident) {
  if (!estimate || run.steps == 0) return;
  const int64_t measured = run.timing.max_memory_allocated;
  // On the CPU, memory offloaded to the host is the device's own.
  const int64_t estimated =
      estimate->total() + (device.is_cpu() ? estimate->offloaded : 0) + resident;
  std::printf(
      "peak memory per rank: measured %s, estimated %s (%s for the step, %s before the "
      "model): %.2fx\n",
      format_bytes(measured).c_str(), format_bytes(estimated).c_str(),
      format_bytes(estimated - resident).c_str(), format_bytes(resident).c_str(),
      static_cast<double>(estimated) / static_cast<double>(measured));
}

void enforce_memory_budget(const GptLabOptions& o, int ranks,
                           const parallel::MemoryEstimate& estimate, Device device) {
  if (o.estimate.max_memory_mb <= 0) return;
  const int64_t budget = o.estimate.max_memory_mb << 20;
  COURSE_CHECK(estimate.total() <= budget, run_name(o, ranks), " needs an estimated ",
               format_bytes(estimate.total()), " per rank, more than --max-memory-mb ",
               o.estimate.max_memory_mb,
               " (try --sharding zero3, --checkpoint-activations, a smaller "
               "--batch-size with --accumulate, or more ranks):\n",
               parallel::describe(estimate));
  device_allocator(device).set_limit(budget);
}

}  // namespace day4
