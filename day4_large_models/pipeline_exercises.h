// The day-4 exercises of pipeline and context parallelism (TP4.6-TP4.8 and TP4.18): what the
// trainee writes in day4_large_models/pipeline_exercises.cc; the complete versions are in
// solutions/day4_large_models/pipeline_exercises.cc. The lab's `--pipeline-exercises` runs a
// pipeline cut, scheduled and connected by TP4.6-TP4.8; //day4_large_models:check tests
// them all on 2, 3 and 4 MPI ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/staged_model.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/pipeline/pipeline_hooks.h"
#include "common/parallel/pipeline/pipeline_schedule.h"

namespace day4 {

using course::Tensor;
namespace nn = course::nn;
namespace parallel = course::parallel;

// TP4.6: the stages of balanced cost. A model's blocks (costs.blocks[b], the cost of block b)
// go to `stages` stages in order, each stage a contiguous run of at least one block; the first
// stage also runs the first part (costs.first: a GPT's embeddings) and the last stage the last
// part (costs.last: its final LayerNorm and output layer). Returns the number of blocks of each
// stage such that the costliest stage is as cheap as any such cut makes it (any of the cuts
// that do, when there are several). 1 <= stages <= the number of blocks.
std::vector<int64_t> balanced_stages(const nn::PartCosts& costs, int stages);

// TP4.7: the actions of stage `stage` (0 = first) of `stages` over `micro_batches`
// micro-batches, in the order it runs them, for two schedules:
//   kGpipe                  every forward (F0, F1, ...), then every backward (B0, B1, ...);
//   kOneForwardOneBackward  a warm-up of forwards, as many as there are later stages (but no
//                           more than the micro-batches), then alternately one forward and one
//                           backward until the forwards are done, then the remaining backwards.
// Forwards and backwards each go in micro-batch order. Every action has chunk 0.
std::vector<parallel::PipelineAction> stage_actions(parallel::PipelineSchedule schedule, int stage,
                                                    int stages, int micro_batches);

// TP4.8: one lockstep round's point-to-point exchange of stage pp.rank() of pp.size(). The
// stage ran `traffic.ran` (or idled), which produced `traffic.produced`: a forward's output
// activation goes to the next stage, a backward's gradient of its input to the previous one;
// at the ends of the pipeline there is no such neighbour and nothing is sent. The neighbours'
// messages of this round land in `traffic.activation_in` (from the previous stage) and
// `traffic.gradient_in` (from the next), where those are defined. Post every send and receive
// of the round as one group (pp.exchange(), tag 0) and wait for it.
void exchange_with_neighbours(parallel::RoundTraffic& traffic, parallel::Communicator& pp);

// TP4.18: ring attention's merge. Two partial attention results for the same n queries over
// two disjoint sets of keys: out_a (n, d) is softmax-weighted over set A's keys alone and
// lse_a (n,) its log-sum-exp of the scaled scores (-infinity where a query sees none of A's
// keys, its out row then 0); likewise out_b and lse_b. Returns the attention over both sets:
// lse = log(exp(lse_a) + exp(lse_b)) and out = exp(lse_a - lse) out_a + exp(lse_b - lse) out_b,
// computed without overflow for log-sum-exps of any size, and out 0, lse -infinity where a
// query sees no key at all. f32 tensors on the CPU.
struct PartialAttention {
  Tensor out;  // (n, d)
  Tensor lse;  // (n,)
};
PartialAttention merge_partial_attention(const PartialAttention& a, const PartialAttention& b);

// TP4.6-TP4.8 as the pipeline's hooks (common/parallel/pipeline/pipeline_hooks.h).
parallel::PipelineHooks pipeline_exercise_hooks();

}  // namespace day4
