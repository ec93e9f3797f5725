// Sharded checkpoints of sharded data parallelism (FSDP's SHARDED_STATE_DICT): every rank
// writes only what it holds, its shard of each unit ("model.<unit>.shard") and any per-rank
// tensors given (its optimizer's states), to its own file (checkpoint.h's rank_file()),
// atomically; the training loop writes the same files for a sharded run's --chkpt; nothing is
// gathered, so saving costs no communication and no rank needs the whole model's memory.
// load_full_model() reassembles the units from the n files into an unsharded model in one
// process (to evaluate, sample or fine-tune it anywhere), checking that every file is there and
// of the same run.
#pragma once

#include <string>

#include "common/nn/sequential.h"
#include "common/parallel/data_parallel/sharded_data_parallel.h"
#include "common/train/checkpoint.h"

namespace course::train {

// Collective: each rank writes its file; returns once every rank's file is in place.
void save_sharded_checkpoint(const std::string& path, parallel::ShardedDataParallel& sharded,
                             const NamedTensors& rank_tensors, const nlohmann::json& header);

// Reads the files of a checkpoint saved on `ranks` ranks into `model` (not wrapped), whose
// repeated blocks are `blocks`, as sharded_data_parallel.h cuts it (over the header's
// "shard_group_size" ranks, all of them if it has none). Returns rank 0's header.
nlohmann::json load_full_model(const std::string& path, int ranks, nn::Module& model,
                               nn::Sequential& blocks);

}  // namespace course::train
