// The throughput model's formulas.
#include "common/parallel/planning/throughput_model.h"

#include <algorithm>
#include <cmath>
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

// The share of the multiprocessors' tile slots that hold outputs when tiles of `tile` cover a
// rows x columns product `count` times: its edge tiles part empty, its last wave part idle. The
// first of the cluster's tiles (the largest, which reuses its operands most) while the product
// fills a wave of them, else the one that fills the slots best, as cuBLAS's heuristics choose.
double filled_share(double rows, double columns, double count, const Cluster& cluster) {
  const auto share = [&](const Tile& tile, double* tiles) {
    *tiles = std::ceil(rows / tile.rows) * std::ceil(columns / tile.columns) * count;
    const double waves = std::ceil(*tiles / cluster.multiprocessors);
    return rows * columns * count / (waves * cluster.multiprocessors * tile.rows * tile.columns);
  };
  double tiles = 0;
  const double largest = share(cluster.tiles.front(), &tiles);
  if (tiles >= cluster.multiprocessors) return largest;
  double best = largest;
  for (const Tile& tile : cluster.tiles) best = std::max(best, share(tile, &tiles));
  return best;
}

// One rank's seconds for `product` over a micro-batch of b samples, c context ranks, its cut over
// t tensor-parallel ranks: matrices of one sample stack their samples as rows, batched ones
// (heads) as more matrices.
double product_seconds(const nn::MatrixProduct& product, double b, double t, double c,
                       const Cluster& cluster) {
  using Cut = nn::MatrixProduct::Cut;
  const bool batched = product.count > 1 || product.cut == Cut::kCount;
  const double rows = product.rows / c * (batched ? 1 : b);
  const double columns = product.columns / (product.cut == Cut::kColumns ? t : 1);
  const double depth = product.depth / (product.cut == Cut::kDepth ? t : 1);
  const double count =
      std::ceil(product.count * (batched ? b : 1) / (product.cut == Cut::kCount ? t : 1));
  const double filled = filled_share(rows, columns, count, cluster);
  return 2 * rows * columns * depth * count / (cluster.peak_flops * cluster.efficiency * filled);
}

// One rank's forward seconds for `work` over a micro-batch: its products (or its multiply-adds at
// the cluster's efficiency when they are not listed) and its memory-bound bytes.
double forward_seconds(const BlockWork& work, double b, double t, double c,
                       const Cluster& cluster) {
  double seconds = 0;
  if (work.products.empty()) {
    seconds = 2 * work.multiply_adds * b / c / (cluster.peak_flops * cluster.efficiency);
  }
  for (const nn::MatrixProduct& product : work.products) {
    seconds += product_seconds(product, b, t, c, cluster);
  }
  return seconds + (work.elementwise_whole_bytes + work.elementwise_cut_bytes / t) * b / c /
                       cluster.memory_bandwidth;
}

// The slowest stage's seconds for one micro-batch: forward, backward (twice the forward) and the
// recomputed forward of its blocks, the ends' products on the last stage, and the weight
// gradients added into the step's.
double slowest_stage_seconds(const StepPlan& plan, const Cluster& cluster,
                             const std::vector<std::pair<int64_t, int64_t>>& stages) {
  const Workload& w = plan.model;
  const double b = plan.micro_batch, t = plan.grid.tp, c = plan.grid.cp, p = plan.grid.pp;
  const double passes = plan.recompute ? 4 : 3;
  const double accumulation = 3 * kBf16Bytes * w.parameters / (t * p) / cluster.memory_bandwidth;
  double slowest = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    double stage = accumulation;
    for (int64_t block = stages[k].first; block < stages[k].second; ++block) {
      stage += passes * forward_seconds(w.blocks[block], b, t, c, cluster);
    }
    if (k + 1 == stages.size()) stage += 3 * forward_seconds(w.ends, b, t, c, cluster);
    slowest = std::max(slowest, stage);
  }
  return slowest;
}

// The most activation bytes a stage keeps (see the header's memory line).
double peak_activations(const StepPlan& plan, double micro_batches,
                        const std::vector<std::pair<int64_t, int64_t>>& stages) {
  const Workload& w = plan.model;
  const double t = plan.grid.tp, b = plan.micro_batch, c = plan.grid.cp, p = plan.grid.pp;
  const auto kept = [t, b, c](const BlockWork& work) {
    return b * (work.saved_whole_bytes + work.saved_cut_bytes / t) / c;
  };
  const auto kept_for_backward = [&](const BlockWork& work) {
    return plan.recompute ? b * kBf16Bytes * work.output_elements / c : kept(work);
  };
  double activations = 0, recomputed = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    double stage = 0;
    for (int64_t block = stages[k].first; block < stages[k].second; ++block) {
      stage += kept_for_backward(w.blocks[block]);
      if (plan.recompute) recomputed = std::max(recomputed, kept(w.blocks[block]));
    }
    const double in_flight = std::min(p - static_cast<double>(k), micro_batches);
    activations = std::max(activations, in_flight * stage);
  }
  return activations + recomputed + kept(w.ends);
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
  out.hardware_flops =
      out.flops + (plan.recompute ? 2 * B * (w.multiply_adds - w.ends.multiply_adds) : 0);
  const auto stages = even_stages(static_cast<int64_t>(w.blocks.size()), g.pp);
  const double slowest = slowest_stage_seconds(plan, cluster, stages);
  out.compute_s = m * slowest;
  out.bubble_s = (p - 1) * slowest;
  double all_outputs = 0;
  for (const BlockWork& block : w.blocks) all_outputs += block.output_elements;
  // A rank's share of each block's output: its tokens' (1/c of them).
  const double all_reduces = plan.recompute ? 6 : 4;
  out.tensor_parallel_s = t > 1 ? all_reduces * m * 2 * (t - 1) / t * kBf16Bytes * b * all_outputs /
                                      c / p / bandwidth(g.tp, cluster)
                                : 0;
  // Keys and values: the outputs' share of the key/value heads.
  const double key_value_share = w.heads > 0 ? static_cast<double>(w.key_value_heads) / w.heads : 1;
  out.context_parallel_s = c > 1 ? 3 * (c - 1) * m * 2 * kBf16Bytes * b * key_value_share *
                                       all_outputs / c / t / p / bandwidth(g.tp * g.cp, cluster)
                                 : 0;
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
  out.memory_bytes = 16 * psi / (t * p) + peak_activations(plan, m, stages);
  out.mfu = out.flops / (out.step_s * n * cluster.peak_flops);
  out.hardware_flops_per_gpu = out.hardware_flops / (out.step_s * n);
  return out;
}

const char* const kDescribedColumns =
    "grid                      m     step s    compute     bubble         tp         cp         pp"
    "         dp     GiB      MFU";

std::string describe(const StepPlan& plan, const StepPrediction& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%-22s  %3lld  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %6.1f  %6.1f%%",
                plan.grid.str().c_str(), static_cast<long long>(r.micro_batches), r.step_s,
                r.compute_s, r.bubble_s, r.tensor_parallel_s, r.context_parallel_s, r.pipeline_s,
                r.data_parallel_s, r.memory_bytes / (1024.0 * 1024 * 1024), 100 * r.mfu);
  return line;
}

}  // namespace course::parallel
