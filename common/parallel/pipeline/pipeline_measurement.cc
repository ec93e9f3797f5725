// The mean pass lengths of a pipeline's measured timeline.
#include "common/parallel/pipeline/pipeline_measurement.h"

#include <array>

namespace course::parallel {

PassCosts mean_pass_costs(const std::vector<TimedAction>& timeline) {
  std::array<double, 3> total{}, count{};  // by PipelineAction::Kind
  for (const TimedAction& a : timeline) {
    const auto kind = static_cast<size_t>(a.action.kind);
    total[kind] += a.end_s - a.start_s;
    ++count[kind];
  }
  const auto mean = [&](PipelineAction::Kind kind) {
    const auto k = static_cast<size_t>(kind);
    return count[k] > 0 ? total[k] / count[k] : 0.0;
  };
  return {mean(PipelineAction::Kind::kForward), mean(PipelineAction::Kind::kBackward),
          mean(PipelineAction::Kind::kWeight)};
}

}  // namespace course::parallel
