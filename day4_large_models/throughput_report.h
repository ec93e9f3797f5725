// The lab's --throughput-gpus: the throughput model (common/parallel/planning/throughput_model.h)
// over every 3D grid of N GPUs, so a trainee sees which grid a model wants before submitting a job.
#pragma once

#include <string>

#include "day4_large_models/gpt_options.h"

namespace day4 {

// Prints the model's formulas and one line per grid dp x tp x pp of `gpus` that the model and
// `options.batch_size` (sequences per step) allow, tensor parallelism within a node; with
// --checkpoint-activations, every block's activations recomputed in backward.
void print_throughput_table(const LabModel& model, int64_t batch_size, int context_parallel,
                            int gpus);

// --throughput-megatron: the model's prediction for a row of Megatron-LM's published table
// (common/parallel/planning/megatron_table.h), or every row ("all"), beside the table's figure.
void print_megatron_rows(const std::string& name);

}  // namespace day4
