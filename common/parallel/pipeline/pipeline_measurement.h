// What a pipeline-parallel run measured, gathered from its stages as numbers for a lab to print
// and draw: each stage's bubble over the steps after the first, the most micro-batches of
// activations it held, and the last step's timed forwards and backwards (with their mean
// lengths, pipeline_measurement.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "common/parallel/pipeline/pipeline_schedule.h"

namespace course::parallel {

struct TimedAction {
  PipelineAction action;
  double start_s, end_s;  // seconds since the step began, the compute only
};

// One round's exchange on a stage: posted when the round's action had finished, done when its
// sends and receives had (after the round's weight passes where it has some).
struct TimedExchange {
  int round = 0;
  double posted_s = 0, done_s = 0;  // seconds since the step began
};

// The mean length of a forward, a backward and a weight pass in `timeline` (seconds; 0 for a
// kind it has none of): the costs bubble_fraction takes.
PassCosts mean_pass_costs(const std::vector<TimedAction>& timeline);

// A stage's steps after the first, summed: their lengths and the compute in them.
struct PipelineTotals {
  int64_t steps = 0;
  double step_seconds = 0, compute_seconds = 0;
};

struct StageMeasurement {
  int world_rank = 0;
  double bubble = 0;  // idle share of the stage's steps after the first
  int micro_batches_in_flight = 0;
  std::vector<TimedAction> last_step;
};

struct PipelineMeasurement {
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int micro_batches = 0;
  int virtual_stages = 1;
  int64_t steps_measured = 0;            // the steps after the first
  std::vector<StageMeasurement> stages;  // of the first pipeline, first to last
};

}  // namespace course::parallel
