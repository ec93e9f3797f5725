// Pipeline parallelism: a staged model's blocks (common/nn/staged_model.h: a GPT, a ViT, a
// CoAtNet) cut into p stages over the ranks of a pipeline communicator (the process grid's pp
// axis), each rank running one stage on the micro-batches of a step in the order of a schedule
// (pipeline_schedule.h). The interleaved schedule cuts the model into p v chunks instead, rank r
// running chunks r, r + p, ... (virtual stages). Activations go to the next (virtual) stage and
// their gradients back to the previous one point to point, in the lockstep rounds of
// pipeline_rounds.h: each round's sends and receives go in one group that the neighbours' groups
// of the same round match, so no schedule deadlocks on NCCL at any message size.
//
// A step's batch is cut into m micro-batches; the last stage's loss of each (cross entropy over
// its logits' last axis) is scaled by 1/m, so the gradients that accumulate over the
// micro-batches are those of the whole batch's mean loss, as on one process (batch
// normalisation excepted: its statistics are each micro-batch's, as with accumulation). After
// the backwards the first and last stages add their gradients of a parameter both train (a
// tied token embedding).
//
// Each forward, backward and weight pass is timed by the device (common/tensor/device_timer.h:
// events on the compute stream, read once the device has reached them, never inside a step):
// the steps' timelines give the measured bubble, and while a profiler listens
// (common/core/activity_log.h) the actions appear in its trace ("F3", "B3", "W3") with the host's
// times of their launch. Under zb-h1 a backward computes the input's gradient only, its
// modules queueing the parameters' (common/nn/context.h) for the action's weight pass.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt_parts.h"
#include "common/nn/staged_model.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/pipeline/pipeline_hooks.h"
#include "common/parallel/pipeline/pipeline_measurement.h"
#include "common/parallel/pipeline/pipeline_rounds.h"
#include "common/parallel/pipeline/pipeline_schedule.h"
#include "common/parallel/pipeline/stage_split.h"
#include "common/tensor/device_timer.h"

namespace course::parallel {

struct PipelineOptions {
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int micro_batches = 4;
  StageBalance balance = StageBalance::kLayers;
  int virtual_stages = 1;  // model chunks per rank: 2 or more for the interleaved schedule
  PipelineHooks hooks;     // the cut, the action lists, the exchange from elsewhere (exercises)
};

class PipelineParallel {
 public:
  // Collective over `pp`: every rank passes a model built from the same seed and the same
  // options; this rank runs stage pp->rank().
  PipelineParallel(std::unique_ptr<nn::StagedModel> model, std::shared_ptr<Communicator> pp,
                   const PipelineOptions& options);
  // A GPT's parts: the whole model, or one cut over tensor-parallel ranks.
  PipelineParallel(nn::GptParts& gpt, std::shared_ptr<Communicator> pp,
                   const PipelineOptions& options);

  // This rank's parameters (every chunk's), named as in the whole model.
  std::vector<std::pair<std::string, nn::Parameter*>> parameters();
  // The same, less a parameter shared by the ends on a rank without the first part: over the
  // pipeline's ranks every parameter of the model once (a global gradient norm's terms).
  std::vector<nn::Parameter*> parameters_counted_once();
  void zero_grad();
  const PipelineOptions& options() const { return options_; }
  // Every (virtual) stage's blocks, in pipeline order.
  const std::vector<nn::StageBounds>& stage_bounds() const { return bounds_; }

  // One step's forwards and backwards over `inputs` and `targets`, the whole batch on every
  // stage (the first reads the inputs, the last the targets): tokens (B, T) i32 and their next
  // tokens (B * T,) i64, or images (B, C, H, W) and their labels (B,) i64. B must split into the
  // micro-batches. Gradients add into the stage's parameters; returns the batch's mean loss, a
  // (1,) f32 tensor on every stage's device (broadcast from the last: no host wait).
  // The loss scale the last stage multiplies the loss gradient by (a (1,) f32 on the device;
  // undefined: none), as TrainingParallelism::set_loss_scale.
  void set_loss_scale(Tensor scale) { loss_scale_ = std::move(scale); }
  Tensor forward_backward(const Tensor& inputs, const Tensor& targets);

  // Collective over the pipeline: every rank's model receives the current values of every stage's
  // parameters and buffers (each broadcast from the stage that trains it), so any rank can
  // validate or sample with the whole model. The stage keeps training its own layers afterwards.
  void gather_model();

  // The last step's actions, and its length (seconds, from its start to its last send); they
  // wait for the device to finish the step (for summaries and benchmarks).
  const std::vector<TimedAction>& timeline();
  // The last step's exchanges, one per round that sends or receives, in round order.
  const std::vector<TimedExchange>& exchanges();
  // When the host launched the last step: on the CPU, where the device is the host, the origin
  // of its timeline on the node's clock (to put several ranks' timelines on one axis).
  std::chrono::steady_clock::time_point step_launched();
  double step_seconds();
  // The share of the last step this stage spent waiting: 1 - compute / step.
  double measured_bubble();
  // The steps after the first, summed (waits for the device likewise).
  PipelineTotals measured_totals();

 private:
  // Runs action `a` on its input from `inbox` (taken out of it); returns what it sends on (an
  // activation or its gradient), or at the ends what it produced: the last stage's logits, the
  // first stage's (undefined) input gradient.
  // A weight pass calls `progress` between its items (the round's messages travelling).
  Tensor run(const PipelineAction& a, std::map<StageMessage, Tensor>& inbox,
             const std::function<void()>& progress = {});
  Tensor forward(const PipelineAction& a, const Tensor& received);
  Tensor backward(const PipelineAction& a, const Tensor& received);
  // The virtual stage of this rank's chunk.
  int virtual_stage(int chunk) const { return chunk * pp_->size() + pp_->rank(); }
  int last_virtual_stage() const { return pp_->size() * options_.virtual_stages - 1; }
  // A message's MPI tag (checked on receipt): 2 (to M + micro-batch) + gradient, M micro-batches.
  int tag(const StageMessage& message) const;
  // The action's device interval in the step's record, and its launch in the activity log.
  void record(const PipelineAction& action, std::unique_ptr<Event> start,
              std::chrono::steady_clock::time_point launched);
  // Reads the recorded steps the device has finished (all of them, waiting, when `wait`).
  void read_steps(bool wait);
  // Where a message lands: an empty tensor of the activation it carries (or its gradient).
  Tensor landing(const StageMessage& message) const;
  // One round's sends and receives, posted as one group (null: none), or through
  // options_.hooks.exchange (posted and waited for).
  WorkPtr post_exchange(const PipelineRound& round, const Tensor& produced,
                        std::map<StageMessage, Tensor>& inbox);
  void exchange_by_hook(const PipelineRound& round, const Tensor& produced,
                        std::map<StageMessage, Tensor>& inbox);
  void add_shared_gradients();

  std::unique_ptr<nn::StagedModel> model_;
  std::shared_ptr<Communicator> pp_;
  std::shared_ptr<Communicator> ends_group_;  // the first and the last stage, for shared_by_ends
  PipelineOptions options_;
  std::vector<nn::StageBounds> bounds_;  // of every virtual stage
  std::vector<std::unique_ptr<nn::Module>> chunks_;
  std::vector<PipelineRound> rounds_;  // this rank's, for every step (pipeline_rounds.h)
  // The step's micro-batches.
  std::vector<Tensor> micro_inputs_, micro_targets_;
  std::vector<nn::Context> contexts_;                   // one per chunk and micro-batch
  bool split_backward_ = false;                         // the schedule has weight passes (zb-h1)
  std::vector<nn::WeightGradientQueue> weight_passes_;  // per context, until its weight pass
  std::vector<Tensor> logits_;                          // the last stage's, until their backward
  Tensor loss_scale_;                                   // set_loss_scale's
  std::vector<CrossEntropyOutput> losses_;              // the last stage's, until their backward
  Tensor loss_sum_;  // the last stage's sum of micro-batch losses / m
  // A step's events: its start and end, and each action's start and end.
  struct ActionEvents {
    PipelineAction action;
    std::unique_ptr<Event> start, end;
  };
  struct ExchangeEvents {
    int round;
    std::unique_ptr<Event> posted, done;
  };
  struct StepRecord {
    std::chrono::steady_clock::time_point launched;
    std::unique_ptr<Event> start, end;
    std::vector<ActionEvents> actions;
    std::vector<ExchangeEvents> exchanges;
    bool first = false;  // the run's first step (not in the totals)
  };
  void give_back(StepRecord& step);  // its events, to the pool
  EventPool events_{process_device()};
  std::deque<StepRecord> unread_;                        // oldest first
  std::vector<TimedAction> timeline_;                    // of the last step read
  std::vector<TimedExchange> exchanges_;                 // of the last step read
  std::chrono::steady_clock::time_point step_launched_;  // of the last step read
  double step_seconds_ = 0;                              // of the last step read
  PipelineTotals totals_;
  int64_t steps_run_ = 0;
};

}  // namespace course::parallel
