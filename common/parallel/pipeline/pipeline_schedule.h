// Pipeline schedules: the order in which one stage of p runs the forward and backward passes of
// m micro-batches, as the course teaches them:
//   naive  one micro-batch at a time through the whole pipeline (F0 B0 F1 B1 ...)
//   gpipe  all forwards, then all backwards (GPipe; picotron's AFAB): m micro-batches'
//          activations in flight at once
//   1f1b   warm-up of min(p - stage - 1, m) forwards, then one forward one backward, then the
//          remaining backwards: at most p - stage micro-batches in flight
//   zb-h1  1F1B with each backward split into its input-gradient pass (B) and its weight-gradient
//          pass (W, common/nn/context.h): the Bs keep 1F1B's places on the critical path and
//          stage s runs each W s backwards late, so that the Ws fill what was 1F1B's
//          cool-down bubble; every stage then holds at most p micro-batches (1F1B's peak, on
//          its first stage). Qi et al., "Zero Bubble Pipeline Parallelism" (2024), ZB-H1
//   interleaved  1F1B over v model chunks per rank (Megatron-LM's virtual stages): the model
//          is cut into p v chunks, rank r holding chunks r, r + p, ...; forwards go through the
//          chunks in groups of p micro-batches, so the pipeline fills v times faster and the
//          bubble shrinks by v; needs m to be a multiple of p
// Every chunk runs its backwards (and weight passes) in micro-batch order, so each parameter's
// gradient adds up in the order a single process accumulating the same micro-batches would use.
#pragma once

#include <string>
#include <vector>

namespace course::parallel {

enum class PipelineSchedule { kNaive, kGpipe, kOneForwardOneBackward, kZeroBubbleH1, kInterleaved };

struct PipelineAction {
  // kBackward: the whole backward, or with kWeight in the list its input-gradient half only.
  enum class Kind { kForward, kBackward, kWeight };
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

// "F3", "B3", "W3" (" c1" added for chunk 1 of an interleaved schedule).
std::string action_name(const PipelineAction& a);

// Whether the list splits its backwards (it has weight passes).
bool splits_backward(const std::vector<PipelineAction>& actions);

// The most activations (of one micro-batch through one chunk) a rank holds at once: from a
// forward to its backward, or to its weight pass where the backward is split.
int micro_batches_in_flight(const std::vector<PipelineAction>& actions);

// How long one stage's passes take (any unit): a forward, a backward (its input-gradient half
// where the schedule splits off weight passes) and a weight pass.
struct PassCosts {
  double forward = 0, backward = 0, weight = 0;
};

// The idle share of a rank's step when every stage's passes take `costs` (a chunk's 1/v of
// them): naive (p - 1) / p, GPipe and 1F1B (p - 1) / (m + p - 1), interleaved
// (p - 1) / (v m + p - 1) (Megatron-LM's bubble-to-compute ratio (p - 1) / (v m) as a share of
// the step), whatever the passes' lengths. ZB-H1 idles (p - 1)(F + B) - (min(m, p) - 1) min(F,
// B, W) of a step m (F + B + W) longer: each of the first weight passes fills a slot the length
// of the shortest pass. With F = B = W (the default) that is the paper's (p - 1) / (3 m + p - 1)
// once m >= p, its bubble (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W): a third; with
// fewer micro-batches p - m slots more (the first gradient's trip back is exposed), and with W
// shorter than F and B less than a third is gained.
double bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                       int virtual_stages = 1, const PassCosts& costs = {1, 1, 1});

// "naive", "gpipe", "1f1b", "zb-h1", "interleaved"
PipelineSchedule parse_pipeline_schedule(const std::string& name);
std::string pipeline_schedule_name(PipelineSchedule schedule);

}  // namespace course::parallel
