// Every grid of the GPUs through the throughput model.
#include "day4_large_models/throughput_report.h"

#include <cstdio>

#include "common/parallel/throughput_model.h"

namespace day4 {

using namespace course;

void print_throughput_table(const GptLabOptions& o, int gpus) {
  const parallel::Cluster cluster;
  const nn::GptConfig model = nn::gpt_preset(o.model);
  std::printf(
      "throughput model: %s (%.2fB parameters), %lld sequences of %lld tokens per step, "
      "micro-batches of 1, on %d GPUs (%d a node, %.0f TFLOP/s bf16 at %.0f%% efficiency, "
      "%.0f GB/s within a node, %.0f GB/s across):\n"
      "  compute F / (n peak eff), F = 72 B s L h^2 (1 + s/6h + V/12Lh); bubble (p-1)/m of it;\n"
      "  tp 4 all-reduces per layer and micro-batch; pp 2 sends per micro-batch; dp one\n"
      "  all-reduce of 2 Psi/(t p) bytes, not overlapped; memory 16 Psi/(t p) + activations of\n"
      "  min(p, m) micro-batches (Korthikanti et al.)\n",
      o.model.c_str(), nn::gpt_parameter_count(model) / 1e9, static_cast<long long>(o.batch_size),
      static_cast<long long>(model.context), gpus, cluster.gpus_per_node, cluster.peak_flops / 1e12,
      100 * cluster.efficiency, cluster.intra_node_bandwidth / 1e9,
      cluster.inter_node_bandwidth / 1e9);
  for (int tp = 1; tp <= std::min(gpus, cluster.gpus_per_node); tp *= 2) {
    for (int pp = 1; tp * pp <= gpus; pp *= 2) {
      if (gpus % (tp * pp) != 0 || model.heads % tp != 0 || model.layers % pp != 0) continue;
      const parallel::StepPlan plan{.model = model,
                                    .grid = {.dp = gpus / (tp * pp), .tp = tp, .pp = pp},
                                    .global_batch = o.batch_size,
                                    .micro_batch = 1};
      if (o.batch_size % plan.grid.dp != 0) continue;
      std::printf("  %s\n", describe(plan, predict_step(plan, cluster)).c_str());
    }
  }
}

}  // namespace day4
