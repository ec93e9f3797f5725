// Pipeline schedules: the order in which one stage of p runs the forward and backward passes of
// m micro-batches, as the course teaches them:
//   naive  one micro-batch at a time through the whole pipeline (F0 B0 F1 B1 ...)
//   gpipe  all forwards, then all backwards (GPipe; picotron's AFAB): m micro-batches'
//          activations in flight at once
//   1f1b   warm-up of min(p - stage - 1, m) forwards, then one forward one backward, then the
//          remaining backwards: at most p - stage micro-batches in flight
// Every stage runs the backwards in micro-batch order, so its gradients add up in the order a
// single process accumulating the same micro-batches would use.
#pragma once

#include <string>
#include <vector>

namespace course::parallel {

enum class PipelineSchedule { kNaive, kGpipe, kOneForwardOneBackward };

struct PipelineAction {
  enum class Kind { kForward, kBackward };
  Kind kind;
  int micro_batch;
  bool operator==(const PipelineAction&) const = default;
};

// The actions of `stage` (0 = first) of `stages`, over `micro_batches`.
std::vector<PipelineAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches);

// The most micro-batches whose activations a stage holds at once under the schedule.
int micro_batches_in_flight(const std::vector<PipelineAction>& actions);

// The idle share of a stage's step when forwards and backwards take equal time everywhere:
// naive (p - 1) / p, GPipe and 1F1B (p - 1) / (m + p - 1).
double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches);

PipelineSchedule parse_pipeline_schedule(const std::string& name);  // "naive", "gpipe", "1f1b"
std::string pipeline_schedule_name(PipelineSchedule schedule);

}  // namespace course::parallel
