// The weak-scaling table of Narayanan et al., "Efficient Large-Scale Language Model Training on
// GPU Clusters Using Megatron-LM" (SC 2021, Table 1), which the course's slides show: GPT models
// of 2,048-token windows and 51,200 tokens, trained with full activation recomputation on A100s
// (TP 8 within a node, the rest as pipeline stages), and the TFLOP/s per GPU each row reached,
// counted with the recomputed forward (96 B s l h^2 (1 + s / 6h + V / 16 l h) a step). The
// throughput model is compared with four of its rows, each from the model's own figures.
#pragma once

#include <string>
#include <vector>

#include "common/parallel/planning/throughput_model.h"

namespace course::parallel {

struct MegatronRow {
  std::string name;  // "megatron-1.7b"
  int64_t hidden, heads, layers;
  int64_t tensor_parallel, pipeline_stages, gpus, global_batch;
  double published_tflops;  // per GPU
};

// 1.7B, 18.4B, 145.6B and 1T: the table's first and last rows and two between.
const std::vector<MegatronRow>& megatron_rows();

// `row` (a name of megatron_rows(), or "1.7b", "18b", "145b", "1t") as a plan: its grid, the
// data-parallel rest of its GPUs, micro-batches of one sequence (the paper's GPT-3 script's),
// activations recomputed. Throws naming the rows.
const MegatronRow& megatron_row(const std::string& name);
StepPlan megatron_plan(const MegatronRow& row);

}  // namespace course::parallel
