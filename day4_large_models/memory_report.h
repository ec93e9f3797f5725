// The GPT lab's memory estimate (common/parallel/memory_estimate.h) for its flags: printed per
// rank before a run, alone with --estimate-only (any preset, any number of ranks, next to the
// ZeRO paper's formulas), and the --max-memory-mb budget: a run estimated above it is refused
// before anything is allocated, and the allocator is capped there.
#pragma once

#include "common/parallel/memory_estimate.h"
#include "common/tensor/device.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

course::parallel::MemoryPlan memory_plan(const GptLabOptions& options, int ranks);

// The run's `estimate` (of memory_plan(options, ranks), computed once per run) as a table, and
// the ZeRO paper's figures for the model's preset.
void print_memory_estimate(const GptLabOptions& options, int ranks,
                           const course::parallel::MemoryEstimate& estimate);

// After a run: the allocator's measured peak against the estimate plus what was allocated
// before the model (`resident`: on the CPU, the text).
void print_measured_against_estimate(const course::parallel::MemoryEstimate& estimate,
                                     course::Device device, int64_t measured, int64_t resident);

// Throws (one message, with the estimate) when the run is estimated above --max-memory-mb;
// otherwise caps `device`'s allocator at it.
void enforce_memory_budget(const GptLabOptions& options, int ranks,
                           const course::parallel::MemoryEstimate& estimate, course::Device device);

}  // namespace day4
