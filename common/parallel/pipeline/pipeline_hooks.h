// The three algorithms of a pipeline that day 4's trainee writes (TP4.6-TP4.8), as functions
// PipelineParallel can take in place of its own: the cut of the blocks into stages, one
// stage's action list, and one lockstep round's exchange with the neighbouring stages. Left
// empty, the pipeline uses its own (stage_split.h, pipeline_schedule.h, pipeline_rounds.h).
// They describe one model chunk per rank, so they go with the gpipe and 1f1b schedules.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "common/nn/staged_model.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/pipeline/pipeline_schedule.h"

namespace course::parallel {

// One stage's part of a lockstep round (pipeline_rounds.h): the action it ran (none: it idled)
// and what that produced, then the messages its neighbours produced this round for it. The
// landing tensors are defined exactly when their message arrives in this round.
struct RoundTraffic {
  std::optional<PipelineAction> ran;
  // A forward's output activation (on the last stage: its logits, which stay there for the
  // loss) or a backward's gradient of its input (on the first stage: undefined, the tokens
  // have none). f32.
  Tensor produced;
  Tensor activation_in;  // lands the previous stage's activation of this round, or undefined
  Tensor gradient_in;    // lands the next stage's gradient of this round, or undefined
};

struct PipelineHooks {
  // The blocks of each stage, from the costs of the forward's multiply-adds of every part.
  std::function<std::vector<int64_t>(const nn::PartCosts& costs, int stages)> cut;
  // One stage's actions under a schedule (gpipe or 1f1b).
  std::function<std::vector<PipelineAction>(PipelineSchedule schedule, int stage, int stages,
                                            int micro_batches)>
      actions;
  // Posts and completes one round's sends and receives over the pipeline's communicator.
  std::function<void(RoundTraffic& traffic, Communicator& pp)> exchange;

  bool any() const { return cut || actions || exchange; }
};

}  // namespace course::parallel
