// Where a pipeline cuts a staged model (common/nn/staged_model.h) into stages: contiguous runs
// of its blocks, each stage at least one.
//   layers      the blocks evenly, the remainder on the first stages (as picotron);
//   parameters  the largest stage's parameters as small as contiguous cuts allow (the first and
//               last parts included): the balance of memory;
//   compute     the same for the forward's multiply-adds: the balance of time, which differs
//               from that of parameters when blocks work at different resolutions (CoAtNet's
//               early stages hold few weights but apply them at many positions).
#pragma once

#include <string>
#include <vector>

#include "common/nn/staged_model.h"

namespace course::parallel {

enum class StageBalance { kLayers, kParameters, kCompute };
std::string stage_balance_name(StageBalance balance);  // "layers", "parameters", "compute"

std::vector<nn::StageBounds> split_stages(nn::StagedModel& model, int stages, StageBalance balance);

// The cut of `costs`' blocks into `stages` contiguous runs of at least one block that makes the
// costliest stage (its blocks, plus the first part on the first stage and the last part on the
// last) as cheap as possible: the number of blocks of each stage.
std::vector<int64_t> cheapest_cut(const nn::PartCosts& costs, int stages);

// The bounds of the stages of `blocks_per_stage` blocks each, over a model of `blocks` blocks.
// Throws unless they are `stages` counts of at least one block that add up to `blocks`.
std::vector<nn::StageBounds> stage_bounds_of(const std::vector<int64_t>& blocks_per_stage,
                                             int stages, int64_t blocks);

}  // namespace course::parallel
