// The schedules as action lists.
#include "common/parallel/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "common/core/error.h"

namespace course::parallel {

namespace {

using Kind = PipelineAction::Kind;

PipelineAction forward(int m) { return {Kind::kForward, m}; }
PipelineAction backward(int m) { return {Kind::kBackward, m}; }
PipelineAction weight(int m) { return {Kind::kWeight, m}; }

// 1F1B's order, each backward's weight pass `delay` backwards after it (the last ones at the
// end): ZB-H1 with delay = stage.
std::vector<PipelineAction> zero_bubble_h1_actions(int stage, int stages, int micro_batches) {
  std::vector<PipelineAction> actions;
  const int warmup = std::min(stages - stage - 1, micro_batches), delay = stage;
  int forwards = 0, backwards = 0, weights = 0;
  const auto backward_then_due_weights = [&] {
    actions.push_back(backward(backwards++));
    while (weights < backwards - delay) actions.push_back(weight(weights++));
  };
  while (forwards < warmup) actions.push_back(forward(forwards++));
  while (forwards < micro_batches) {
    actions.push_back(forward(forwards++));
    backward_then_due_weights();
  }
  while (backwards < micro_batches) backward_then_due_weights();
  while (weights < micro_batches) actions.push_back(weight(weights++));
  return actions;
}

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
    case PipelineSchedule::kZeroBubbleH1:
      return zero_bubble_h1_actions(stage, stages, micro_batches);
    case PipelineSchedule::kInterleaved:
      break;  // above
  }
  return actions;
}

void check_action_list(const std::vector<PipelineAction>& actions, int stage, int micro_batches,
                       int virtual_stages) {
  // runs[chunk][micro-batch][kind]: how many passes of each kind the list has.
  std::vector<std::vector<std::array<int, 3>>> runs(
      virtual_stages, std::vector<std::array<int, 3>>(micro_batches, {0, 0, 0}));
  for (const PipelineAction& a : actions) {
    COURSE_CHECK(a.micro_batch >= 0 && a.micro_batch < micro_batches && a.chunk >= 0 &&
                     a.chunk < virtual_stages,
                 "stage ", stage, "'s actions name micro-batch ", a.micro_batch, " of chunk ",
                 a.chunk, ", outside the step's ", micro_batches, " micro-batches and ",
                 virtual_stages, " chunk(s)");
    ++runs[a.chunk][a.micro_batch][static_cast<int>(a.kind)];
  }
  const int weights = splits_backward(actions) ? 1 : 0;
  for (int c = 0; c < virtual_stages; ++c) {
    for (int m = 0; m < micro_batches; ++m) {
      const auto [forwards, backwards, weight_passes] = runs[c][m];
      COURSE_CHECK(forwards == 1 && backwards == 1 && weight_passes == weights, "stage ", stage,
                   "'s actions run micro-batch ", m,
                   (virtual_stages > 1 ? " of chunk " + std::to_string(c) : ""), " forward ",
                   forwards, " time(s), backward ", backwards, " time(s) and weight pass ",
                   weight_passes,
                   " time(s): each forward and backward runs once, and each "
                   "weight pass once where the list splits its backwards");
    }
  }
}

std::string action_name(const PipelineAction& a) {
  const char* letter = a.kind == Kind::kForward ? "F" : a.kind == Kind::kBackward ? "B" : "W";
  return letter + std::to_string(a.micro_batch) +
         (a.chunk > 0 ? " c" + std::to_string(a.chunk) : "");
}

bool splits_backward(const std::vector<PipelineAction>& actions) {
  return std::any_of(actions.begin(), actions.end(),
                     [](const PipelineAction& a) { return a.kind == Kind::kWeight; });
}

int micro_batches_in_flight(const std::vector<PipelineAction>& actions) {
  const Kind releases = splits_backward(actions) ? Kind::kWeight : Kind::kBackward;
  int in_flight = 0, most = 0;
  for (const PipelineAction& a : actions) {
    if (a.kind == Kind::kForward) ++in_flight;
    if (a.kind == releases) --in_flight;
    most = std::max(most, in_flight);
  }
  return most;
}

double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches, int virtual_stages,
                       const PassCosts& costs) {
  const double p = stages, m = micro_batches, v = virtual_stages;
  if (schedule == PipelineSchedule::kNaive) return (p - 1) / p;
  if (schedule == PipelineSchedule::kInterleaved) return (p - 1) / (v * m + p - 1);
  if (schedule == PipelineSchedule::kZeroBubbleH1) {
    const auto [f, b, w] = costs;
    const double idle = (p - 1) * (f + b) - (std::min(m, p) - 1) * std::min({f, b, w});
    return idle / (m * (f + b + w) + idle);
  }
  return (p - 1) / (m + p - 1);
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "naive") return PipelineSchedule::kNaive;
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  if (name == "zb-h1") return PipelineSchedule::kZeroBubbleH1;
  if (name == "interleaved") return PipelineSchedule::kInterleaved;
  COURSE_FAIL("unknown pipeline schedule '", name,
              "' (known: naive, gpipe, 1f1b, zb-h1, interleaved)");
}

std::string pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kNaive:
      return "naive";
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneForwardOneBackward:
      return "1f1b";
    case PipelineSchedule::kZeroBubbleH1:
      return "zb-h1";
    case PipelineSchedule::kInterleaved:
      return "interleaved";
  }
  return "?";
}

}  // namespace course::parallel
