// The schedules as action lists.
#include "common/parallel/pipeline_schedule.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/core/error.h"

namespace course::parallel {

namespace {

using Kind = PipelineAction::Kind;

PipelineAction forward(int m) { return {Kind::kForward, m}; }
PipelineAction backward(int m) { return {Kind::kBackward, m}; }

// Megatron-LM's interleaved order: the k-th forward (or backward) of a rank takes micro-batches
// in groups of p, one chunk after another (backwards through the chunks in reverse).
PipelineAction interleaved_action(Kind kind, int k, int stages, int virtual_stages) {
  const int group = k / stages;
  const int micro_batch = (k / (stages * virtual_stages)) * stages + k % stages;
  const int chunk =
      kind == Kind::kForward ? group % virtual_stages : virtual_stages - 1 - group % virtual_stages;
  return {kind, micro_batch, chunk};
}

// Warm-up forwards: enough for the last chunk's first backward to find its input, two per
// later rank (a forward and the backward coming back) plus a full round of the other chunks.
std::vector<PipelineAction> interleaved_actions(int stage, int stages, int micro_batches,
                                                int virtual_stages) {
  COURSE_CHECK(virtual_stages >= 2 && micro_batches % stages == 0,
               "the interleaved schedule needs at least 2 virtual stages per rank (got ",
               virtual_stages, ") and micro-batches in multiples of the ", stages, " stages (got ",
               micro_batches, ")");
  const int total = micro_batches * virtual_stages;
  const int warmup = std::min((stages - stage - 1) * 2 + (virtual_stages - 1) * stages, total);
  std::vector<PipelineAction> actions;
  int forwards = 0, backwards = 0;
  const auto next_forward = [&] {
    actions.push_back(interleaved_action(Kind::kForward, forwards++, stages, virtual_stages));
  };
  const auto next_backward = [&] {
    actions.push_back(interleaved_action(Kind::kBackward, backwards++, stages, virtual_stages));
  };
  while (forwards < warmup) next_forward();
  while (forwards < total) {
    next_forward();
    next_backward();
  }
  while (backwards < total) next_backward();
  return actions;
}

}  // namespace

std::vector<PipelineAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches, int virtual_stages) {
  COURSE_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1, "stage ", stage,
               " of ", stages, " with ", micro_batches, " micro-batches is not a pipeline");
  if (schedule == PipelineSchedule::kInterleaved) {
    return interleaved_actions(stage, stages, micro_batches, virtual_stages);
  }
  COURSE_CHECK(virtual_stages == 1, "the ", pipeline_schedule_name(schedule),
               " schedule runs one model chunk per rank, not ", virtual_stages,
               " (virtual stages are the interleaved schedule's)");
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
    case PipelineSchedule::kInterleaved:
      break;  // above
  }
  return actions;
}

void check_action_list(const std::vector<PipelineAction>& actions, int stage, int micro_batches,
                       int virtual_stages) {
  // runs[chunk][micro-batch]: how many forwards (first) and backwards (second) the list has.
  std::vector<std::vector<std::pair<int, int>>> runs(
      virtual_stages, std::vector<std::pair<int, int>>(micro_batches, {0, 0}));
  for (const PipelineAction& a : actions) {
    COURSE_CHECK(a.micro_batch >= 0 && a.micro_batch < micro_batches && a.chunk >= 0 &&
                     a.chunk < virtual_stages,
                 "stage ", stage, "'s actions name micro-batch ", a.micro_batch, " of chunk ",
                 a.chunk, ", outside the step's ", micro_batches, " micro-batches and ",
                 virtual_stages, " chunk(s)");
    auto& [forwards, backwards] = runs[a.chunk][a.micro_batch];
    ++(a.kind == Kind::kForward ? forwards : backwards);
  }
  for (int c = 0; c < virtual_stages; ++c) {
    for (int m = 0; m < micro_batches; ++m) {
      const auto [forwards, backwards] = runs[c][m];
      COURSE_CHECK(forwards == 1 && backwards == 1, "stage ", stage, "'s actions run micro-batch ",
                   m, (virtual_stages > 1 ? " of chunk " + std::to_string(c) : ""), " forward ",
                   forwards, " time(s) and backward ", backwards, " time(s), not once each");
    }
  }
}

int micro_batches_in_flight(const std::vector<PipelineAction>& actions) {
  int in_flight = 0, most = 0;
  for (const PipelineAction& a : actions) {
    in_flight += a.kind == Kind::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                       int virtual_stages) {
  const double p = stages, m = micro_batches, v = virtual_stages;
  if (schedule == PipelineSchedule::kNaive) return (p - 1) / p;
  if (schedule == PipelineSchedule::kInterleaved) return (p - 1) / (v * m + p - 1);
  return (p - 1) / (m + p - 1);
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "naive") return PipelineSchedule::kNaive;
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  if (name == "interleaved") return PipelineSchedule::kInterleaved;
  COURSE_FAIL("unknown pipeline schedule '", name, "' (known: naive, gpipe, 1f1b, interleaved)");
}

std::string pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kNaive:
      return "naive";
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneForwardOneBackward:
      return "1f1b";
    case PipelineSchedule::kInterleaved:
      return "interleaved";
  }
  return "?";
}

}  // namespace course::parallel
