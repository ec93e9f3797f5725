// Contiguous cuts of a model's blocks into pipeline stages.
#include "common/parallel/pipeline/stage_split.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/core/error.h"

namespace course::parallel {

std::vector<nn::StageBounds> stage_bounds_of(const std::vector<int64_t>& blocks_per_stage,
                                             int stages, int64_t blocks) {
  std::string counts;
  int64_t total = 0;
  bool each_has_one = true;
  for (const int64_t n : blocks_per_stage) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    total += n;
    each_has_one = each_has_one && n >= 1;
  }
  COURSE_CHECK(
      static_cast<int>(blocks_per_stage.size()) == stages && each_has_one && total == blocks,
      "a cut of ", blocks, " blocks into ", stages,
      " stages needs that many counts of at least one block adding up to ", blocks, ", got {",
      counts, "}");
  std::vector<nn::StageBounds> out;
  int64_t first = 0;
  for (int s = 0; s < stages; ++s) {
    out.push_back({first, first + blocks_per_stage[s], s == 0, s + 1 == stages});
    first += blocks_per_stage[s];
  }
  return out;
}

std::string stage_balance_name(StageBalance balance) {
  switch (balance) {
    case StageBalance::kParameters:
      return "parameters";
    case StageBalance::kCompute:
      return "compute";
    case StageBalance::kLayers:
      break;
  }
  return "layers";
}

std::vector<int64_t> cheapest_cut(const nn::PartCosts& costs, int stages) {
  const auto blocks = static_cast<int64_t>(costs.blocks.size());
  // prefix[b]: the first b blocks' cost.
  std::vector<double> prefix(blocks + 1, 0.0);
  for (int64_t b = 0; b < blocks; ++b) prefix[b + 1] = prefix[b] + costs.blocks[b];
  const auto cost = [&](int s, int64_t from, int64_t to) {
    return prefix[to] - prefix[from] + (s == 0 ? costs.first : 0.0) +
           (s == stages - 1 ? costs.last : 0.0);
  };
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // best[s][b]: the smallest costliest stage when stages 0..s-1 hold the first b blocks.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(blocks + 1, kNone));
  std::vector<std::vector<int64_t>> take(stages + 1, std::vector<int64_t>(blocks + 1, 0));
  best[0][0] = 0;
  for (int s = 0; s < stages; ++s) {
    for (int64_t used = 0; used < blocks; ++used) {
      if (best[s][used] == kNone) continue;
      for (int64_t n = 1; used + n <= blocks; ++n) {
        const double worst = std::max(best[s][used], cost(s, used, used + n));
        if (worst < best[s + 1][used + n]) {
          best[s + 1][used + n] = worst;
          take[s + 1][used + n] = n;
        }
      }
    }
  }
  std::vector<int64_t> out(stages);
  for (int64_t s = stages, used = blocks; s > 0; --s) {
    out[s - 1] = take[s][used];
    used -= out[s - 1];
  }
  return out;
}

std::vector<nn::StageBounds> split_stages(nn::StagedModel& model, int stages,
                                          StageBalance balance) {
  const int64_t blocks = model.blocks();
  COURSE_CHECK(stages >= 1 && stages <= blocks, "a model of ", blocks,
               " blocks does not split into ", stages, " pipeline stages of at least one block");
  switch (balance) {
    case StageBalance::kParameters:
      return stage_bounds_of(cheapest_cut(model.parameters(stages), stages), stages, blocks);
    case StageBalance::kCompute:
      return stage_bounds_of(cheapest_cut(model.multiply_adds(), stages), stages, blocks);
    case StageBalance::kLayers:
      break;
  }
  std::vector<int64_t> per_stage(stages, blocks / stages);
  for (int s = 0; s < blocks % stages; ++s) ++per_stage[s];
  return stage_bounds_of(per_stage, stages, blocks);
}

}  // namespace course::parallel
