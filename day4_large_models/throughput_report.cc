// Every grid of the GPUs through the throughput model.
#include "day4_large_models/throughput_report.h"

#include <cstdio>
#include <string>

#include "common/parallel/planning/megatron_table.h"
#include "common/parallel/planning/throughput_model.h"

namespace day4 {

using namespace course;

namespace {

// The preset's workload: a language model's, or an image model's at its own size.
parallel::Workload preset_workload(const LabModel& model) {
  if (model.images()) return parallel::image_workload(nn::preset_model_config(model.name));
  return parallel::gpt_workload(*model.language);
}

}  // namespace

void print_throughput_table(const LabModel& preset, int64_t batch_size, int context_parallel,
                            int gpus) {
  const bool recompute = preset.checkpoint_activations;
  const parallel::Cluster cluster;
  const parallel::Workload model = preset_workload(preset);
  std::printf(
      "throughput model: %s (%.2fB parameters, %.4g GMAC a sample), %lld %s per step, "
      "micro-batches of 1, %s, on %d GPUs (%d a node, %.0f TFLOP/s bf16, products at %.0f%% of it\n"
      "  in whole waves of tiles, %.0f GB/s within a node, %.0f GB/s across):\n"
      "  compute m x the slowest stage's micro-batch (its products, memory-bound work and\n"
      "  gradient accumulation), F = 6 B x multiply-adds a sample; bubble (p-1) x that stage's;\n"
      "  tp 4 all-reduces per block and micro-batch (6 recomputing); cp 3 (c-1) ring passes of a\n"
      "  rank's keys and values per block and micro-batch; pp 2 sends per micro-batch; dp one\n"
      "  all-reduce of"
      " 2 Psi/(t p) bytes over dp x cp, not overlapped; memory 16 Psi/(t p) + activations\n"
      "  of min(p - k, m) micro-batches on stage k, over c (%s)\n",
      preset.name.c_str(), model.parameters / 1e9, model.multiply_adds / 1e9,
      static_cast<long long>(batch_size), model.sample.c_str(),
      recompute ? "activations recomputed" : "no recomputation", gpus, cluster.gpus_per_node,
      cluster.peak_flops / 1e12, 100 * cluster.efficiency, cluster.intra_node_bandwidth / 1e9,
      cluster.inter_node_bandwidth / 1e9,
      model.heads > 0 ? "Korthikanti et al." : "measured block by block; tp 1: blocks not cut");
  const int max_tp = model.heads > 0 ? std::min(gpus, cluster.gpus_per_node) : 1;
  const int cp = context_parallel;  // every grid's, from --context-parallel
  std::printf("  %s\n", parallel::kDescribedColumns);
  for (int tp = 1; tp <= max_tp; tp *= 2) {
    for (int pp = 1; tp * pp * cp <= gpus; pp *= 2) {
      const parallel::StepPlan plan{
          .model = model,
          .grid = {.dp = gpus / (tp * pp * cp), .tp = tp, .pp = pp, .cp = cp},
          .global_batch = batch_size,
          .micro_batch = 1,
          .recompute = recompute};
      if (gpus % (tp * pp * cp) != 0 || !grid_misfit(plan).empty()) continue;
      std::printf("  %s\n", describe(plan, predict_step(plan, cluster)).c_str());
    }
  }
}

namespace {

void print_megatron_row(const parallel::MegatronRow& row, const parallel::Cluster& cluster) {
  const parallel::StepPlan plan = parallel::megatron_plan(row);
  const parallel::StepPrediction r = predict_step(plan, cluster);
  const double predicted = 100 * r.hardware_flops_per_gpu / cluster.peak_flops;
  const double published = 100 * row.published_tflops * 1e12 / cluster.peak_flops;
  std::printf(
      "  %-14s  %7.1f  %6lld  %6lld  %5lld  %-20s  %5lld  %3lld  %8.3f  %9.0f  %6.1f%%  %9.0f  "
      "%6.1f%%  %+6.1f\n",
      row.name.c_str(), plan.model.parameters / 1e9, static_cast<long long>(row.hidden),
      static_cast<long long>(row.layers), static_cast<long long>(row.gpus), plan.grid.str().c_str(),
      static_cast<long long>(row.global_batch), static_cast<long long>(r.micro_batches), r.step_s,
      r.hardware_flops_per_gpu / 1e12, predicted, row.published_tflops, published,
      predicted - published);
}

}  // namespace

void print_megatron_rows(const std::string& name) {
  const parallel::Cluster cluster;
  std::printf(
      "Megatron-LM's table (Narayanan et al. 2021) against the throughput model: A100s (%.0f "
      "TFLOP/s bf16, products at %.0f%% of it in whole waves of tiles on %d multiprocessors, "
      "%.0f GB/s of memory, %.0f GB/s NVLink, %.0f GB/s InfiniBand a GPU), "
      "activations recomputed, micro-batches of 1, TFLOP/s a GPU counting the recomputation:\n"
      "  model           params B  hidden  layers   GPUs  grid                  batch    m    "
      "step s  predicted  of peak  published  of peak  points\n",
      cluster.peak_flops / 1e12, 100 * cluster.efficiency, cluster.multiprocessors,
      cluster.memory_bandwidth / 1e9, cluster.intra_node_bandwidth / 1e9,
      cluster.inter_node_bandwidth / 1e9);
  if (name != "all") return print_megatron_row(parallel::megatron_row(name), cluster);
  for (const parallel::MegatronRow& row : parallel::megatron_rows()) {
    print_megatron_row(row, cluster);
  }
}

}  // namespace day4
