// A model under model parallelism: the job's ranks as a process grid of
// dp x cp x tp x pp = (world / (C T P)) x C x T x P. A GPT's every layer is cut over the T ranks
// of the tensor-parallel axis (tensor_parallel_gpt.h); each window's positions are cut over the
// C ranks of the context-parallel axis, attention a ring over them (ring_attention.h); the
// blocks are cut into P stages, each rank training one stage (pipeline_parallel.h) over the
// micro-batches of its pipeline's batch; the gradients are averaged over the data-parallel
// replicas and the context-parallel ranks (3D parallelism, 4D with C > 1). Without stages
// the micro-batches are accumulated. An image model is cut into stages from its pieces
// (common/nn/piece_stages.h); a ViT's blocks are cut over the T ranks as well
// (tensor_parallel_vit.h), CoAtNet takes the pipeline and data axes only. Validation and sampling
// use the whole model, gathered from the stages and slices on every rank.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/parallel/comm/process_grid.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/parallel/tensor_parallel/tensor_parallel_gpt.h"
#include "common/parallel/tensor_parallel/tensor_parallel_vit.h"
#include "common/parallel/training_parallelism.h"
#include "common/tensor/device_timer.h"

namespace course::parallel {

struct ModelParallelOptions {
  int tensor_parallel = 1;         // T: ranks every layer is cut over
  bool sequence_parallel = false;  // and the activations between them along the sequence
  int context_parallel = 1;        // C: ranks each window's positions are cut over (a GPT's)
  int pipeline_stages = 1;         // P: stages of blocks, a rank each
  PipelineOptions pipeline;        // its micro-batches: accumulated when P is 1
  std::optional<DType> compute;    // autocast's dtype (none: f32)
};

class ModelParallelTraining : public TrainingParallelism {
 public:
  // Collective over `world`, whose size must be a multiple of C x T x P; every rank passes a
  // `model` built from the same seed.
  ModelParallelTraining(nn::Gpt& model, std::shared_ptr<Communicator> world,
                        const ModelParallelOptions& options);
  // An image model as assembled from its pieces (stem, blocks, head); `sample` one input
  // (1, C, H, W) in the run's memory format. No sequence parallelism.
  ModelParallelTraining(nn::Module& model, const Tensor& sample,
                        std::shared_ptr<Communicator> world, const ModelParallelOptions& options);

  // This rank's stage's parameters (its slices of them).
  std::vector<std::pair<std::string, nn::Parameter*>> optimized() override {
    return pipeline_.parameters();
  }
  int data_rank() const override { return grid_.coordinates().dp; }
  int data_ranks() const override { return grid_.shape().dp; }
  int micro_batches() const override { return pipeline_.options().micro_batches; }
  // Every micro-batch forward and backward through the pipeline (one "pipeline" phase) on this
  // rank's positions of the replica's windows, then the stage's gradients averaged over the
  // data-parallel replicas and the context-parallel ranks; the loss is the replica's.
  Tensor forward_backward(const NextTokenBatch& batch,
                          const std::function<void(Phase)>& mark) override;
  void after_step() override {}
  // Slices summed over tp (a replicated parameter counted once), stages over pp (the table
  // shared by the ends once); the replicas hold the same averaged gradient.
  Tensor squared_gradient_norm() override;
  // The model passed to the constructor, with every stage's and every slice's current values.
  nn::Module& whole_model() override;
  nlohmann::json checkpoint_layout() const override;
  std::string describe() const override;
  // A stage's waits for its neighbours are its bubble: the exposed time is the replicas'
  // averaging. The bytes are what this rank's steps sent: activations, gradients and averages.
  double bytes_sent() const override { return step_bytes_sent_; }
  double exposed_communication_seconds() override { return averaging_.total_seconds(); }
  std::optional<PipelineMeasurement> pipeline_measurement() override;

 private:
  void average_over_replicas();

  nn::Module& whole_;
  nn::Gpt* gpt_ = nullptr;  // a GPT's, whose slices a tensor-parallel run gathers into it
  ProcessGrid grid_;
  // With tensor parallelism: the GPT's or the ViT's slices on this rank.
  std::unique_ptr<TensorParallelGpt> cut_gpt_;
  std::unique_ptr<TensorParallelVit> cut_vit_;
  PipelineParallel pipeline_;
  std::optional<DType> compute_;
  // Parameters applied to sequence slices: their gradients are summed over tp after each step.
  std::vector<nn::Parameter*> sequence_sharded_;
  // Parameters every tensor-parallel rank holds whole (none without tensor parallelism).
  std::unordered_set<const nn::Parameter*> replicated_over_tp_;
  double step_bytes_sent_ = 0;
  IntervalTimer averaging_{process_device()};  // the replicas' gradient averaging
};

}  // namespace course::parallel
