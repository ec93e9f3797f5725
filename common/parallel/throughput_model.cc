// The throughput model's formulas.
#include "common/parallel/throughput_model.h"

#include <algorithm>
#include <cstdio>

#include "common/core/error.h"

namespace course::parallel {

namespace {

constexpr double kBf16 = 2;  // bytes

// Bandwidth of a collective whose ranks are `span` consecutive GPUs apart in the grid's order.
double bandwidth(int span, const Cluster& cluster) {
  return span <= cluster.gpus_per_node ? cluster.intra_node_bandwidth
                                       : cluster.inter_node_bandwidth;
}

}  // namespace

StepPrediction predict_step(const StepPlan& plan, const Cluster& cluster) {
  const nn::GptConfig& c = plan.model;
  const GridShape& g = plan.grid;
  const double n = g.size(), t = g.tp, p = g.pp, d = g.dp;
  const double s = c.context, h = c.channels, L = c.layers, V = c.vocabulary, a = c.heads;
  COURSE_CHECK(c.heads % g.tp == 0 && c.key_value_heads() % g.tp == 0 && c.layers % g.pp == 0 &&
                   plan.global_batch % (plan.micro_batch * g.dp) == 0,
               c.name, " on ", g.str(), ": the heads (", c.heads, ", ", c.key_value_heads(),
               " of keys and values) must split over tp, the ", c.layers,
               " layers over pp, and the batch of ", plan.global_batch, " into micro-batches of ",
               plan.micro_batch, " over dp");
  StepPrediction out;
  const double B = plan.global_batch, b = plan.micro_batch;
  out.micro_batches = plan.global_batch / (plan.micro_batch * g.dp);
  const double m = out.micro_batches;
  // Megatron-LM's count, 72 B s L h^2 (1 + s / 6h + V / 12 L h) for GPT-2, written for any
  // block: 6 flops per weight-matrix element and token, plus attention's 12 B s^2 L h.
  const double block_matrices = static_cast<double>(nn::gpt_parameter_parts(c).block_matrices);
  out.flops = 6 * B * s * (L * block_matrices + V * h) + 12 * B * s * s * L * h;
  out.compute_s = out.flops / (n * cluster.peak_flops * cluster.efficiency);
  out.bubble_s = out.compute_s * (p - 1) / m;
  const double activation_bytes = b * s * h * kBf16;
  out.tensor_parallel_s =
      t > 1 ? 4 * (L / p) * m * 2 * (t - 1) / t * activation_bytes / bandwidth(g.tp, cluster) : 0;
  out.pipeline_s = p > 1 ? 2 * m * activation_bytes / bandwidth(g.tp * g.dp * 2, cluster) : 0;
  const double psi = static_cast<double>(nn::gpt_parameter_count(c));
  out.data_parallel_s =
      d > 1 ? 2 * (d - 1) / d * kBf16 * psi / (t * p) / bandwidth(g.tp * g.dp, cluster) : 0;
  out.step_s =
      out.compute_s + out.bubble_s + out.tensor_parallel_s + out.pipeline_s + out.data_parallel_s;
  // Korthikanti et al.'s activations per layer, s b h (10 + 24 / t + 5 a s / h t) for GPT-2,
  // whose MLP saves 8 h bf16 values a token (16 of the 24); other MLPs save theirs.
  const double mlp =
      kBf16 * static_cast<double>(c.feed_forward_expansion() + c.feed_forward_width()) / h;
  const double per_layer = s * b * h * (10 + (8 + mlp) / t + 5 * a * s / (h * t));
  const double in_flight = std::min(p, m);
  out.memory_bytes = 16 * psi / (t * p) + in_flight * (L / p) * per_layer + s * b * (h + 4 * V / t);
  out.mfu = out.flops / (out.step_s * n * cluster.peak_flops);
  return out;
}

std::string describe(const StepPlan& plan, const StepPrediction& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%-22s m %3lld  step %7.3f s (compute %.3f, bubble %.3f, tp %.3f, pp %.3f, dp "
                "%.3f)  %6.1f GiB  MFU %4.1f%%",
                plan.grid.str().c_str(), static_cast<long long>(r.micro_batches), r.step_s,
                r.compute_s, r.bubble_s, r.tensor_parallel_s, r.pipeline_s, r.data_parallel_s,
                r.memory_bytes / (1024.0 * 1024 * 1024), 100 * r.mfu);
  return line;
}

}  // namespace course::parallel
