// The day-4 lab's memory estimate (common/parallel/planning/memory_estimate.h,
// image_memory_estimate.h) for its flags: printed per rank before a run, alone with --estimate-only
// (any preset, any number of ranks, next to the ZeRO paper's formulas), and the --max-memory-mb
// budget: a run estimated above it is refused before anything is allocated, and the allocator is
// capped there.
#pragma once

#include <optional>

#include "common/parallel/planning/image_memory_estimate.h"
#include "common/parallel/planning/memory_estimate.h"
#include "common/tensor/device.h"
#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

// How the run's data-parallel mode holds the model's state on `ranks` ranks; the plans of the
// run's model, batch, precision and parallelism.
course::parallel::StatePlan state_plan(course::optim::OptimizerKind optimizer,
                                       const DataParallelChoice& data_parallel, int ranks);
course::parallel::MemoryPlan memory_plan(const GptLabOptions& options, int ranks);
// An image model's (`model`: its name, channels, classes and image size).
course::parallel::ImageMemoryPlan image_memory_plan(const GptLabOptions& options, int ranks,
                                                    const course::nn::ModelConfig& model);

// The run's `estimate` (computed once per run) as a table, and the ZeRO paper's figures for the
// model's `parameters`.
void print_memory_estimate(const GptLabOptions& options, int ranks,
                           const course::parallel::MemoryEstimate& estimate, int64_t parameters);

// After a run of some steps: the allocator's measured peak against the estimate (when the run has
// one) plus what was allocated before the model (`resident`: on the CPU, the text).
void print_measured_against_estimate(
    const std::optional<course::parallel::MemoryEstimate>& estimate, course::Device device,
    const course::train::LoopResult& run, int64_t resident);

// Throws (one message, with the estimate) when the run is estimated above --max-memory-mb;
// otherwise caps `device`'s allocator at it.
void enforce_memory_budget(const GptLabOptions& options, int ranks,
                           const course::parallel::MemoryEstimate& estimate, course::Device device);

}  // namespace day4
