// Pipeline parallelism for a GPT: its blocks cut into p stages over the ranks of a pipeline
// communicator (the process grid's pp axis), each rank running one stage (nn::GptStage) on the
// micro-batches of a step in the order of a schedule (pipeline_schedule.h). The interleaved
// schedule cuts the model into p v chunks instead, rank r running chunks r, r + p, ... (virtual
// stages). Activations go to the next (virtual) stage and their gradients back to the previous
// one point to point, in the lockstep rounds of pipeline_rounds.h: each round's sends and
// receives go in one group that the neighbours' groups of the same round match, so no schedule
// deadlocks on NCCL at any message size.
//
// A step's batch is cut into m micro-batches; the last stage's loss of each is scaled by 1/m,
// so the gradients that accumulate over the micro-batches are those of the whole batch's mean
// loss, as on one process. After the backwards the first and last stages add their gradients of
// the tied token embedding.
//
// Each forward and backward is timed: the step's timeline gives the measured bubble, and while
// a profiler listens (common/core/activity_log.h) the actions appear in its trace ("F3", "B3").
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/data/token_windows.h"
#include "common/kernels/cross_entropy.h"
#include "common/nn/gpt_stage.h"
#include "common/parallel/communicator.h"
#include "common/parallel/pipeline_measurement.h"
#include "common/parallel/pipeline_rounds.h"
#include "common/parallel/pipeline_schedule.h"

namespace course::parallel {

// How the blocks are cut: by layers evenly (the remainder on the first stages, as picotron), or
// by parameters so the stages' parameter counts (embedding and output layer included) are as
// even as contiguous cuts allow.
enum class StageBalance { kLayers, kParameters };
std::string stage_balance_name(StageBalance balance);  // "layers", "parameters"
std::vector<nn::StageBounds> split_stages(const nn::GptConfig& config, int stages,
                                          StageBalance balance);

struct PipelineOptions {
  PipelineSchedule schedule = PipelineSchedule::kOneForwardOneBackward;
  int micro_batches = 4;
  StageBalance balance = StageBalance::kLayers;
  int virtual_stages = 1;  // model chunks per rank: 2 or more for the interleaved schedule
};

class PipelineParallel {
 public:
  // Collective over `pp`: every rank passes a model (a Gpt, or one cut over tensor-parallel
  // ranks) built from the same seed and the same options; this rank runs stage pp->rank().
  PipelineParallel(nn::GptParts& gpt, std::shared_ptr<Communicator> pp,
                   const PipelineOptions& options);

  // This rank's parameters (every chunk's), named as in the whole model.
  std::vector<std::pair<std::string, nn::Parameter*>> parameters();
  void zero_grad();
  const PipelineOptions& options() const { return options_; }

  // One step's forwards and backwards over `tokens` and `targets` (B, T) i32 / (B * T,) i64, the
  // whole batch on every stage (the first reads the tokens, the last the targets); B must split
  // into the micro-batches. Gradients add into the stage's parameters; returns the batch's mean
  // loss, on every stage.
  float forward_backward(const Tensor& tokens, const Tensor& targets);

  // Collective over the pipeline: every rank's model receives the current values of every stage's
  // parameters (each broadcast from the stage that trains it), so any rank can validate or
  // sample with the whole model. The stage keeps training its own layers afterwards.
  void gather_model();

  // The last step's actions, and its length (seconds, from its start to its last send).
  const std::vector<TimedAction>& timeline() const { return timeline_; }
  double step_seconds() const { return step_seconds_; }
  // The share of the last step this stage spent waiting: 1 - compute / step.
  double measured_bubble() const;

 private:
  // Runs action `a` on its input from `inbox` (taken out of it); returns what it sends on (an
  // activation or its gradient; undefined at the ends of the pipeline).
  Tensor run(const PipelineAction& a, const NextTokenBatch& batch,
             std::map<StageMessage, Tensor>& inbox);
  Tensor forward(const PipelineAction& a, const NextTokenBatch& batch, const Tensor& received);
  Tensor backward(const PipelineAction& a, const NextTokenBatch& batch, const Tensor& received);
  // The virtual stage of this rank's chunk.
  int virtual_stage(int chunk) const { return chunk * pp_->size() + pp_->rank(); }
  int last_virtual_stage() const { return pp_->size() * options_.virtual_stages - 1; }
  // A message's MPI tag (checked on receipt): 2 (to M + micro-batch) + gradient, M micro-batches.
  int tag(const StageMessage& message) const;
  void record(const PipelineAction& action, std::chrono::steady_clock::time_point start);
  void add_tied_embedding_gradients();

  nn::GptParts& gpt_;
  std::shared_ptr<Communicator> pp_;
  std::shared_ptr<Communicator> embedding_group_;  // the first and the last stage
  PipelineOptions options_;
  std::vector<std::unique_ptr<nn::GptStage>> chunks_;
  std::vector<PipelineRound> rounds_;  // this rank's, for every step (pipeline_rounds.h)
  int64_t channels_;
  int64_t micro_batch_size_ = 0, sequence_ = 0;
  std::vector<nn::Context> contexts_;       // one per chunk and micro-batch
  std::vector<Tensor> logits_;              // the last stage's, until their backward
  std::vector<CrossEntropyOutput> losses_;  // the last stage's, until their backward
  Tensor loss_sum_;                         // the last stage's sum of micro-batch losses / m
  std::vector<TimedAction> timeline_;
  std::chrono::steady_clock::time_point step_start_;
  double step_seconds_ = 0;
};

}  // namespace course::parallel
