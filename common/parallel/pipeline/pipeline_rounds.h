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

#include "common/parallel/pipeline/pipeline_schedule.h"

namespace course::parallel {

// What crosses between two virtual stages: micro-batch `micro_batch`'s activation into virtual
// stage `to` (from to - 1), or the gradient of virtual stage `to`'s output (from to + 1).
struct StageMessage {
  bool gradient;
  int micro_batch;
  int to;  // the receiving virtual stage: rank to % p, chunk to / p
  auto operator<=>(const StageMessage&) const = default;
};

// The rank that sends `message` among `stages` ranks: its receiver's predecessor for an
// activation, its successor for a gradient.
int sender_of(const StageMessage& message, int stages);

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

// What a replay of the timetable charges beyond the passes: the seconds one round's exchange
// takes once both of its ends have posted it, and how many stages can compute at once (the cores
// of a node whose ranks share them; 0: every stage has its own device).
struct ReplayMachine {
  double message_seconds = 0;
  int cores = 0;
};

// The bubble the timetable itself gives (the stages' mean of 1 - compute / step, the step ending
// when the last stage's does, as the schedules' formulas count it) when the passes take `costs`
// (one entry per stage), replayed on `machine` (by default: free messages, a device per stage).
// A stage's round is its action, then its weight passes while the round's messages travel; it
// leaves the round when those are done and each exchange with a neighbour has taken
// `message_seconds` from the later of the two postings. So a fast stage waits for its slower
// neighbour's pass, where the schedules' formulas assume equal passes and a stage that starts
// as soon as its input arrives. With fewer cores than stages, a stage's work waits for a free
// core (the one that became free last before the stage is ready, else the first to be free).
double timetable_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                        const std::vector<PassCosts>& costs, const ReplayMachine& machine = {});

// The same replay with each action's own length: `action_seconds[s][k]` is the k-th action of
// stage s's list (a step's measured timeline). Passes of one kind that vary cost a lockstep
// timetable more than their mean says: each round waits for the longer of two neighbours'.
double replayed_bubble(const std::vector<std::vector<PipelineRound>>& rounds,
                       const std::vector<std::vector<double>>& action_seconds,
                       const ReplayMachine& machine = {});

// The message an action of `stage` needs first (none for the first stage's forwards and the
// last one's backwards), and the one it produces.
std::optional<StageMessage> action_input(const PipelineAction& a, int stage, int stages,
                                         int virtual_stages);
std::optional<StageMessage> action_output(const PipelineAction& a, int stage, int stages,
                                          int virtual_stages);

}  // namespace course::parallel
