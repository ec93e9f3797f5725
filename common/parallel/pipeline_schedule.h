// Pipeline schedules: the order in which one stage of p runs the forward and backward passes of
// m micro-batches, as the course teaches them:
//   naive  one micro-batch at a time through the whole pipeline (F0 B0 F1 B1 ...)
//   gpipe  all forwards, then all backwards (GPipe; picotron's AFAB): m micro-batches'
//          activations in flight at once
//   1f1b   warm-up of min(p - stage - 1, m) forwards, then one forward one backward, then the
//          remaining backwards: at most p - stage micro-batches in flight
//   interleaved  1F1B over v model chunks per rank (Megatron-LM's virtual stages): the model
//          is cut into p v chunks, rank r holding chunks r, r + p, ...; forwards go through the
//          chunks in groups of p micro-batches, so the pipeline fills v times faster and the
//          bubble shrinks by v; needs m to be a multiple of p
// Every chunk runs its backwards in micro-batch order, so each parameter's gradient adds up in
// the order a single process accumulating the same micro-batches would use.
#pragma once

#include <string>
#include <vector>

namespace course::parallel {

enum class PipelineSchedule { kNaive, kGpipe, kOneForwardOneBackward, kInterleaved };

struct PipelineAction {
  enum class Kind { kForward, kBackward };
  Kind kind;
  int micro_batch;
  int chunk = 0;  // the rank's model chunk (interleaved; else 0)
  bool operator==(const PipelineAction&) const = default;
};

// The actions of rank `stage` (0 = first) of `stages`, over `micro_batches`, with
// `virtual_stages` chunks per rank (at least 2 for interleaved, else 1). Throws on a shape the
// schedule cannot run.
std::vector<PipelineAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                             int micro_batches, int virtual_stages = 1);

// Throws unless `actions` run the forward and the backward of every (chunk, micro-batch) of
// stage `stage` exactly once: the first check of an action list from elsewhere.
void check_action_list(const std::vector<PipelineAction>& actions, int stage, int micro_batches,
                       int virtual_stages);

// The most activations (of one micro-batch through one chunk) a rank holds at once.
int micro_batches_in_flight(const std::vector<PipelineAction>& actions);

// The idle share of a rank's step when forwards (and backwards) of every chunk take equal time:
// naive (p - 1) / p, GPipe and 1F1B (p - 1) / (m + p - 1), interleaved (p - 1) / (v m + p - 1)
// (Megatron-LM's bubble-to-compute ratio (p - 1) / (v m) as a share of the step).
double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                       int virtual_stages = 1);

// "naive", "gpipe", "1f1b", "interleaved"
PipelineSchedule parse_pipeline_schedule(const std::string& name);
std::string pipeline_schedule_name(PipelineSchedule schedule);

}  // namespace course::parallel
