// Checks of the model-parallel grid's flags (grid_validate.cc), which validate() (gpt_validate.cc)
// runs for the run's model: one message and an error for a grid the model or the other flags
// cannot take.
#pragma once

#include <cstdint>
#include <string>

#include "day4_large_models/gpt_options.h"

namespace day4 {

// The pipeline axis, against the `blocks` of `model` it cuts (any family).
void validate_pipeline(const PipelineChoice& pipeline, const std::string& model, int64_t blocks,
                       int64_t accumulate);
// The grid's axes together, against data parallelism and the memory estimate.
void validate_grid(const GridChoice& grid, const DataParallelChoice& data_parallel,
                   const EstimateChoice& estimate);
// A language model's tensor-parallel axis (and sequence parallelism), and its context-parallel
// axis.
void validate_tensor_parallel(const GridChoice& grid, const LabModel& model);
void validate_context_parallel(int context_parallel, const LabModel& model);
// An image model's tensor-parallel axis: a ViT's blocks, its tokens whole.
void validate_image_tensor_parallel(const GridChoice& grid, const LabModel& model);

}  // namespace day4
