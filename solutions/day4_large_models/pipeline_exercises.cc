// Day 4 exercises TP4.6-TP4.8 and TP4.18, pipeline and context parallelism (the lab sheet is
// day4_large_models/README.md). solutions/day4_large_models/pipeline_exercises.cc is the complete
// version; day4_large_models/pipeline_exercises.cc is generated from it by tools/labgen with
// every exercise replaced by a stub: trainees edit that one.
#include "day4_large_models/pipeline_exercises.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/core/exercise.h"

namespace day4 {

using Kind = parallel::PipelineAction::Kind;

std::vector<int64_t> balanced_stages(const nn::PartCosts& costs, int stages) {
  // BEGIN EXERCISE TP4.6: the cheapest limit on a stage's cost that a greedy fill meets
  const auto blocks = static_cast<int64_t>(costs.blocks.size());
  // Can the stages each cost at most `limit`? Fills them from the first, each with as many
  // blocks as fit (leaving one for each later stage): no cut covers more of the model with as
  // many stages. Returns the blocks of each stage, or nothing when the last stage, which takes
  // the rest, costs more.
  const auto fill_up_to = [&](double limit) -> std::vector<int64_t> {
    std::vector<int64_t> taken;
    int64_t next = 0;
    for (int s = 0; s < stages; ++s) {
      const bool last = s == stages - 1;
      const int64_t start = next, end = last ? blocks : blocks - (stages - 1 - s);
      double load = (s == 0 ? costs.first : 0.0) + costs.blocks[next++];
      while (next < end && (last || load + costs.blocks[next] <= limit)) {
        load += costs.blocks[next++];
      }
      if (last) load += costs.last;
      if (load > limit) return {};
      taken.push_back(next - start);
    }
    return taken;
  };
  // The costliest stage of the best cut costs what some contiguous run of blocks costs (with
  // the first or last part where the run starts or ends the model), summed in the fill's order.
  std::vector<double> candidates;
  for (int64_t from = 0; from < blocks; ++from) {
    double load = from == 0 ? costs.first : 0.0;
    for (int64_t to = from + 1; to <= blocks; ++to) {
      load += costs.blocks[to - 1];
      candidates.push_back(to == blocks ? load + costs.last : load);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  // A fill that meets a limit meets every larger one: the smallest met, by binary search.
  const auto first_met =
      std::partition_point(candidates.begin(), candidates.end(),
                           [&](double limit) { return fill_up_to(limit).empty(); });
  return fill_up_to(*first_met);
  // END EXERCISE
}

std::vector<parallel::PipelineAction> stage_actions(parallel::PipelineSchedule schedule, int stage,
                                                    int stages, int micro_batches) {
  std::vector<parallel::PipelineAction> actions;
  // BEGIN EXERCISE TP4.7: GPipe, then 1F1B's warm-up, steady state and cool-down
  const auto forward = [&](int m) { actions.push_back({Kind::kForward, m}); };
  const auto backward = [&](int m) { actions.push_back({Kind::kBackward, m}); };
  if (schedule == parallel::PipelineSchedule::kGpipe) {
    for (int m = 0; m < micro_batches; ++m) forward(m);
    for (int m = 0; m < micro_batches; ++m) backward(m);
    return actions;
  }
  const int warmup = std::min(stages - 1 - stage, micro_batches);
  int forwards = 0, backwards = 0;
  while (forwards < warmup) forward(forwards++);
  while (forwards < micro_batches) {
    forward(forwards++);
    backward(backwards++);
  }
  while (backwards < micro_batches) backward(backwards++);
  // END EXERCISE
  return actions;
}

void exchange_with_neighbours(parallel::RoundTraffic& traffic, parallel::Communicator& pp) {
  // BEGIN EXERCISE TP4.8: the round's sends and receives with both neighbours in one group
  const int stage = pp.rank(), last = pp.size() - 1;
  std::vector<parallel::PeerTransfer> group;
  if (traffic.ran && traffic.ran->kind == Kind::kForward && stage < last) {
    group.push_back(parallel::send_to(traffic.produced, stage + 1));
  }
  if (traffic.ran && traffic.ran->kind == Kind::kBackward && stage > 0) {
    group.push_back(parallel::send_to(traffic.produced, stage - 1));
  }
  if (traffic.activation_in.defined()) {
    group.push_back(parallel::receive_from(traffic.activation_in, stage - 1));
  }
  if (traffic.gradient_in.defined()) {
    group.push_back(parallel::receive_from(traffic.gradient_in, stage + 1));
  }
  if (!group.empty()) pp.exchange(group)->wait();
  // END EXERCISE
}

PartialAttention merge_partial_attention(const PartialAttention& a, const PartialAttention& b) {
  for (const Tensor* t : {&a.out, &a.lse, &b.out, &b.lse}) {
    COURSE_CHECK(t->dtype() == course::DType::kF32 && t->device().is_cpu() &&
                     t->memory_format() == course::MemoryFormat::kContiguous,
                 "merge_partial_attention takes contiguous f32 CPU tensors, got ", t->str());
  }
  const int64_t n = a.out.dim() == 2 ? a.out.size(0) : -1, d = n < 0 ? -1 : a.out.size(1);
  COURSE_CHECK(n >= 0 && a.out.shape() == b.out.shape() && a.lse.shape() == course::Shape({n}) &&
                   b.lse.shape() == course::Shape({n}),
               "partial attention results to merge must be (n, d) and (n,) alike, got ",
               a.out.str(), " ", a.lse.str(), " and ", b.out.str(), " ", b.lse.str());
  PartialAttention merged{Tensor::empty({n, d}), Tensor::empty({n})};
  // BEGIN EXERCISE TP4.18: rescale both by their share of the larger log-sum-exp, then add
  const float *out_a = a.out.data_as<float>(), *out_b = b.out.data_as<float>();
  const float *lse_a = a.lse.data_as<float>(), *lse_b = b.lse.data_as<float>();
  float* out = merged.out.data_as<float>();
  float* lse = merged.lse.data_as<float>();
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const float top = std::max(lse_a[i], lse_b[i]);
    if (top == kNone) {  // no key seen on either side
      lse[i] = kNone;
      std::fill(out + i * d, out + (i + 1) * d, 0.0f);
      continue;
    }
    const float weight_a = std::exp(lse_a[i] - top), weight_b = std::exp(lse_b[i] - top);
    const float total = weight_a + weight_b;
    lse[i] = top + std::log(total);
    for (int64_t j = 0; j < d; ++j) {
      out[i * d + j] = (weight_a * out_a[i * d + j] + weight_b * out_b[i * d + j]) / total;
    }
  }
  // END EXERCISE
  return merged;
}

parallel::PipelineHooks pipeline_exercise_hooks() {
  return {.cut = balanced_stages, .actions = stage_actions, .exchange = exchange_with_neighbours};
}

}  // namespace day4
