// The day-4 lab's choice of parallelism from its flags: model parallelism on the dp x tp x pp
// grid (--tensor-parallel, --pipeline-stages: common/parallel/model_parallel_training.h), or
// data parallelism: the library's modes (one process, DDP, ZeRO 1-3, FSDP's strategies:
// common/parallel/data_parallel/data_parallel_model.h) or, for the GPT, "exercise-zero1", ZeRO-1
// built from the trainee's TP4.1-TP4.3 over the whole model as one flat parameter. And what a
// checkpoint of the chosen parallelism holds per rank.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common/models/gpt/gpt.h"
#include "common/optim/gradient_clipping.h"
#include "common/optim/loss_scaler.h"
#include "common/optim/optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/optimizer_in_backward.h"
#include "common/parallel/training_parallelism.h"
#include "common/train/step_graph.h"
#include "common/train/step_phases.h"
#include "common/train/training_state.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

// How the flags cut the run: the grid's axes, data parallelism's mode, and the run's
// accumulation and compute dtype.
struct ParallelismChoice {
  const GridChoice& grid;
  const DataParallelChoice& data_parallel;
  const course::train::RunFlags& run;
};

// Collective over `comm`.
std::unique_ptr<course::parallel::TrainingParallelism> make_parallelism(
    course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> comm,
    const ParallelismChoice& choice);

// An image model (ViT, CoAtNet, as assembled from pieces: stem, blocks, head), its blocks the
// sharding units or the pipeline's; `sample` one input image (1, C, H, W) in the run's memory
// format.
std::unique_ptr<course::parallel::TrainingParallelism> make_image_parallelism(
    course::nn::Module& model, const course::Tensor& sample,
    std::shared_ptr<course::parallel::Communicator> comm, const ParallelismChoice& choice);

// The optimizer `choice` names, with the run's learning rate, momentum and weight decay, for a
// run under `parallelism` over `comm` (a 1-bit one then takes data parallelism's gradient
// exchange over after its warm-up), and its learning-rate schedule over `total_steps`
// (--lr-decay-steps when given), behind --warmup-steps.
struct LabOptimizer {
  std::unique_ptr<course::optim::Optimizer> optimizer;
  std::shared_ptr<const course::optim::Schedule> schedule;
  // --optimizer-in-backward: the optimizer's updates inside the backward pass.
  std::unique_ptr<course::parallel::OptimizerInBackward> in_backward;
  // --amp --amp-dtype f16: the dynamic loss scaler, and the job's ranks, which agree on its
  // overflow flag before any of them steps; --overflow-drill's step (0: none).
  std::unique_ptr<course::optim::LossScaler> scaler;
  std::shared_ptr<course::parallel::Communicator> world;
  int64_t overflow_drill = 0;
  bool drilled = false;  // the drill's inf was put in (a 1-bit step it skipped is not counted)
};
LabOptimizer make_lab_optimizer(const OptimizerChoice& choice, const course::train::RunFlags& run,
                                course::parallel::TrainingParallelism& parallelism,
                                std::shared_ptr<course::parallel::Communicator> comm,
                                int64_t total_steps);

// The lab's training step: forward and backward under `parallelism`, then the optimizer's step
// (clipped first) or, in backward, its updates; run() returns the loss (forward_backward's).
// With --cuda-graphs, after one eager step, every batch of the first one's shape runs as one
// replay of the captured step (common/train/step_graph.h: torch.compile's "reduce-overhead"),
// the schedule's learning rate still set per step; under data, tensor and context parallelism
// its collectives are captured with it (NCCL's in the CUDA graph, the MPI engine's as tasks of
// the CPU graph: communicator.h); gpt_validate.cc refuses what decides on the host mid-step.
class LabStep {
 public:
  LabStep(LabOptimizer& optimizer, course::optim::GradientClipping& clipping,
          course::parallel::TrainingParallelism& parallelism, course::Device device,
          bool cuda_graphs);

  // `batch`'s inputs and targets (an image model's images and labels).
  course::Tensor run(const course::NextTokenBatch& batch, course::train::StepPhases& phases);
  // The model ran outside the step (validation): with --cuda-graphs the next step runs eagerly and
  // captures the graph anew, since that work moved state the captured step had taken as fixed
  // (ZeRO-3's and SHARD_GRAD_OP's replays drifted from the eager steps after an epoch's
  // validation).
  void recapture_after_outside_use();

 private:
  course::Tensor passes_and_update(const course::NextTokenBatch& batch,
                                   const std::function<void(course::train::Phase)>& mark);
  // --optimizer-in-backward: the updates inside the backward pass (f16: its two passes).
  course::Tensor passes_updating_in_backward(const course::NextTokenBatch& batch,
                                             const std::function<void(course::train::Phase)>& mark);
  // f16: the gradients this rank steps divided by the scale, the overflow flag agreed by every
  // rank (max), returned as the step's skip flag; undefined without a scaler.
  course::Tensor unscale_and_agree();
  // Made in the member initialisers (GCC 12's -Wmaybe-uninitialized otherwise, day 1's note).
  std::optional<course::train::StepGraph> captured_step(course::Device device);
  course::train::StepGraph::Step graphed_step();  // the passes and the update, as captured

  LabOptimizer& optimizer_;
  course::optim::GradientClipping& clipping_;
  course::parallel::TrainingParallelism& parallelism_;
  course::Device device_;
  std::optional<course::train::StepGraph> graph_;
  bool eager_step_done_ = false;
};

// A sharded or model-parallel run's checkpoint is a file per rank: its shards or its stage's
// slices, and its optimizer's state (none, for a `layout` that is empty: one file of the whole
// model).
std::function<course::train::NamedTensors()> checkpoint_rank_state(
    const nlohmann::json& layout, course::parallel::TrainingParallelism& parallelism,
    course::optim::Optimizer& optimizer);

}  // namespace day4
