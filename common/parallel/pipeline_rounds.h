// The point-to-point timetable of a pipeline step, so that it cannot deadlock on NCCL at any
// message size. All stages advance in lockstep rounds: in each round a stage runs its next
// action if that action's input has arrived (else it idles), then every stage takes part in
// one group of sends and receives: the messages produced in this round, each received in the
// same round by its neighbour. Every group is thus matched entirely by groups of the same round,
// which NCCL (and the MPI engine, which completes a rank's groups in order as NCCL's stream
// does) completes without a cycle; a send never waits behind a receive of a later round, the
// deadlock of ungrouped 1F1B and of interleaved schedules with send-only groups. This is
// Megatron-LM's lockstep send_forward_recv_backward exchange, derived for any schedule.
//
// Every stage computes the whole timetable from every stage's action list (the schedules are
// deterministic), and a schedule whose actions can never all run (a backward before its
// forward, a forward waiting for an activation nobody sends) is an error, not a hang.
#pragma once

#include <compare>
#include <optional>
#include <vector>

#include "common/parallel/pipeline_schedule.h"

namespace course::parallel {

// What crosses between two virtual stages: micro-batch `micro_batch`'s activation into virtual
// stage `to` (from to - 1), or the gradient of virtual stage `to`'s output (from to + 1).
struct StageMessage {
  bool gradient;
  int micro_batch;
  int to;  // the receiving virtual stage: rank to % p, chunk to / p
  auto operator<=>(const StageMessage&) const = default;
};

struct PipelineRound {
  std::optional<PipelineAction> action;  // run in this round (none: the stage idles)
  std::vector<StageMessage> sends;       // produced by the action, sent at the round's end
  std::vector<StageMessage> receives;    // produced by neighbours this round, for this stage
  // Weight passes (a split backward's second half) the action list puts after this round's
  // action: local work that needs no message, run once the round's messages are posted and
  // while they travel, so they take no round of their own and fill the wait for the neighbours.
  std::vector<PipelineAction> weight_passes;
};

// The rounds of every stage, from `actions[s]`, stage s's action list over `virtual_stages`
// chunks per stage. Throws when the actions cannot all run.
std::vector<std::vector<PipelineRound>> pipeline_rounds(
    const std::vector<std::vector<PipelineAction>>& actions, int virtual_stages);

// How long one stage's passes take (seconds): a forward, a backward (its input-gradient half
// where the schedule splits off weight passes) and a weight pass.
struct PassCosts {
  double forward = 0, backward = 0, weight = 0;
};

// The bubble the timetable itself gives (the stages' mean of 1 - compute / step, the step ending
// when the last stage's does, as the schedules' formulas count it) when the passes take `costs`
// (one entry per stage) and messages take no time: a stage's round is its action, then its
// weight passes while the round's messages travel; it leaves the round when those are done and
// every neighbour it exchanges with has finished its action too. So a fast stage waits for its
// slower neighbour's pass, where the schedules' formulas assume equal passes and a stage that
// starts as soon as its input arrives.
double timetable_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                        const std::vector<PassCosts>& costs);

// The message an action of `stage` needs first (none for the first stage's forwards and the
// last one's backwards), and the one it produces.
std::optional<StageMessage> action_input(const PipelineAction& a, int stage, int stages,
                                         int virtual_stages);
std::optional<StageMessage> action_output(const PipelineAction& a, int stage, int stages,
                                          int virtual_stages);

}  // namespace course::parallel
