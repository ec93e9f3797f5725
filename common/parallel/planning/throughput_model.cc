// The throughput model's formulas.
#include "common/parallel/planning/throughput_model.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/core/error.h"

namespace course::parallel {

namespace {

// Bandwidth of a collective whose ranks are `span` consecutive GPUs apart in the grid's order.
double bandwidth(int span, const Cluster& cluster) {
  return span <= cluster.gpus_per_node ? cluster.intra_node_bandwidth
                                       : cluster.inter_node_bandwidth;
}

// Each stage's blocks [first, end), cut evenly, the first stages taking the remainder.
std::vector<std::pair<int64_t, int64_t>> even_stages(int64_t blocks, int64_t stages) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = 0, first = 0; k < stages; ++k) {
    const int64_t end = first + blocks / stages + (k < blocks % stages ? 1 : 0);
    out.emplace_back(first, end);
    first = end;
  }
  return out;
}

}  // namespace

std::string grid_misfit(const StepPlan& plan) {
  const Workload& w = plan.model;
  const GridShape& g = plan.grid;
  const std::string where = w.name + " on " + g.str() + ": ";
  if (g.tp > 1 && w.heads == 0) {
    return where + "its blocks are not cut over tensor-parallel ranks (tp 1)";
  }
  if (g.tp > 1 && (w.heads % g.tp != 0 || w.key_value_heads % g.tp != 0)) {
    return where + "its heads (" + std::to_string(w.heads) + ", " +
           std::to_string(w.key_value_heads) + " of keys and values) must split over tp";
  }
  if (g.cp > 1 && (w.sequence == 0 || w.sequence % (2 * g.cp) != 0)) {
    return where + (w.sequence == 0 ? "its samples are not windows of tokens to cut over cp"
                                    : "its window of " + std::to_string(w.sequence) +
                                          " tokens does not cut into 2 x cp chunks");
  }
  if (g.pp > static_cast<int64_t>(w.blocks.size())) {
    return where + "its " + std::to_string(w.blocks.size()) + " blocks do not fill " +
           std::to_string(g.pp) + " stages";
  }
  if (plan.global_batch % (plan.micro_batch * g.dp) != 0) {
    return where + "the batch of " + std::to_string(plan.global_batch) +
           " does not split into micro-batches of " + std::to_string(plan.micro_batch) + " over dp";
  }
  return "";
}

StepPrediction predict_step(const StepPlan& plan, const Cluster& cluster) {
  const std::string misfit = grid_misfit(plan);
  COURSE_CHECK(misfit.empty(), misfit);
  const Workload& w = plan.model;
  const GridShape& g = plan.grid;
  const double n = g.size(), t = g.tp, p = g.pp, d = g.dp, c = g.cp;
  StepPrediction out;
  const double B = plan.global_batch, b = plan.micro_batch;
  out.micro_batches = plan.global_batch / (plan.micro_batch * g.dp);
  const double m = out.micro_batches;
  // 2 flops a multiply-add forward, 4 backward (the input's gradient and the weights').
  out.flops = 6 * B * w.multiply_adds;
  out.compute_s = out.flops / (n * cluster.peak_flops * cluster.efficiency);
  out.bubble_s = out.compute_s * (p - 1) / m;
  double all_outputs = 0;
  for (const BlockWork& block : w.blocks) all_outputs += block.output_elements;
  // A rank's share of each block's output: its tokens' (1/c of them).
  out.tensor_parallel_s = t > 1 ? 4 * m * 2 * (t - 1) / t * kBf16Bytes * b * all_outputs / c / p /
                                      bandwidth(g.tp, cluster)
                                : 0;
  // Keys and values: the outputs' share of the key/value heads.
  const double key_value_share = w.heads > 0 ? static_cast<double>(w.key_value_heads) / w.heads : 1;
  out.context_parallel_s = c > 1 ? 3 * (c - 1) * m * 2 * kBf16Bytes * b * key_value_share *
                                       all_outputs / c / t / p / bandwidth(g.tp * g.cp, cluster)
                                 : 0;
  const auto stages = even_stages(static_cast<int64_t>(w.blocks.size()), g.pp);
  double crossing = 0;  // the largest output sent to the next stage
  for (size_t k = 0; k + 1 < stages.size(); ++k) {
    crossing = std::max(crossing, w.blocks[stages[k].second - 1].output_elements);
  }
  out.pipeline_s =
      p > 1 ? 2 * m * kBf16Bytes * b * crossing / c / bandwidth(g.tp * g.cp * g.dp * 2, cluster)
            : 0;
  const double psi = w.parameters, replicas = d * c;
  out.data_parallel_s = replicas > 1 ? 2 * (replicas - 1) / replicas * kBf16Bytes * psi / (t * p) /
                                           bandwidth(g.tp * g.cp * g.dp, cluster)
                                     : 0;
  out.step_s = out.compute_s + out.bubble_s + out.tensor_parallel_s + out.context_parallel_s +
               out.pipeline_s + out.data_parallel_s;
  const auto kept = [t, b, c](const BlockWork& work) {
    return b * (work.saved_whole_bytes + work.saved_cut_bytes / t) / c;
  };
  double activations = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    double stage = 0;
    for (int64_t block = stages[k].first; block < stages[k].second; ++block) {
      stage += kept(w.blocks[block]);
    }
    activations = std::max(activations, std::min(p - static_cast<double>(k), m) * stage);
  }
  out.memory_bytes = 16 * psi / (t * p) + activations + kept(w.ends);
  out.mfu = out.flops / (out.step_s * n * cluster.peak_flops);
  return out;
}

std::string describe(const StepPlan& plan, const StepPrediction& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%-22s m %3lld  step %7.3f s (compute %.3f, bubble %.3f, tp %.3f, cp %.3f, pp "
                "%.3f, dp %.3f)  %6.1f GiB  MFU %4.1f%%",
                plan.grid.str().c_str(), static_cast<long long>(r.micro_batches), r.step_s,
                r.compute_s, r.bubble_s, r.tensor_parallel_s, r.context_parallel_s, r.pipeline_s,
                r.data_parallel_s, r.memory_bytes / (1024.0 * 1024 * 1024), 100 * r.mfu);
  return line;
}

}  // namespace course::parallel
