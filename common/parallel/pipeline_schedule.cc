// The three schedules as action lists.
#include "common/parallel/pipeline_schedule.h"

#include <algorithm>

#include "common/core/error.h"

namespace course::parallel {

namespace {

using Kind = PipelineAction::Kind;

PipelineAction forward(int m) { return {Kind::kForward, m}; }
PipelineAction backward(int m) { return {Kind::kBackward, m}; }

}  // namespace

std::vector<PipelineAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches) {
  COURSE_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1, "stage ", stage,
               " of ", stages, " with ", micro_batches, " micro-batches is not a pipeline");
  std::vector<PipelineAction> actions;
  switch (schedule) {
    case PipelineSchedule::kNaive:
      for (int m = 0; m < micro_batches; ++m) {
        actions.push_back(forward(m));
        actions.push_back(backward(m));
      }
      break;
    case PipelineSchedule::kGpipe:
      for (int m = 0; m < micro_batches; ++m) actions.push_back(forward(m));
      for (int m = 0; m < micro_batches; ++m) actions.push_back(backward(m));
      break;
    case PipelineSchedule::kOneForwardOneBackward: {
      const int warmup = std::min(stages - stage - 1, micro_batches);
      int next_forward = 0, next_backward = 0;
      while (next_forward < warmup) actions.push_back(forward(next_forward++));
      while (next_forward < micro_batches) {
        actions.push_back(forward(next_forward++));
        actions.push_back(backward(next_backward++));
      }
      while (next_backward < micro_batches) actions.push_back(backward(next_backward++));
      break;
    }
  }
  return actions;
}

int micro_batches_in_flight(const std::vector<PipelineAction>& actions) {
  int in_flight = 0, most = 0;
  for (const PipelineAction& a : actions) {
    in_flight += a.kind == Kind::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches) {
  const double p = stages, m = micro_batches;
  if (schedule == PipelineSchedule::kNaive) return (p - 1) / p;
  return (p - 1) / (m + p - 1);
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "naive") return PipelineSchedule::kNaive;
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  COURSE_FAIL("unknown pipeline schedule '", name, "' (known: naive, gpipe, 1f1b)");
}

std::string pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kNaive:
      return "naive";
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneForwardOneBackward:
      return "1f1b";
  }
  return "?";
}

}  // namespace course::parallel
