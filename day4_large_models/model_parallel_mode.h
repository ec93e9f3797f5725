// The GPT lab's model parallelism (--tensor-parallel T, --pipeline-stages P): the job's ranks as a
// process grid of dp x tp x pp = (world / (T P)) x T x P. Every layer is cut over the T ranks of
// the tensor-parallel axis (common/parallel/tensor_parallel_gpt.h); the blocks are cut into P
// stages, each rank training one stage (common/parallel/pipeline_parallel.h) over the
// micro-batches of its pipeline's batch; the replicas' gradients are averaged over the
// data-parallel axis (3D parallelism). Without stages the micro-batches are --accumulate's.
// Validation and sampling use the whole model, gathered from the stages and slices on every rank.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/data/token_windows.h"
#include "common/nn/gpt.h"
#include "common/parallel/pipeline_parallel.h"
#include "common/parallel/process_grid.h"
#include "common/parallel/tensor_parallel_gpt.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

class ModelParallelMode {
 public:
  // Collective over `world`, whose size must be a multiple of tensor_parallel x pipeline_stages.
  ModelParallelMode(course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> world,
                    const GptLabOptions& options);

  // This rank's parameters (its stage's, its slices of them), named as in the whole model: the
  // optimizer's and the checkpoint's.
  std::vector<std::pair<std::string, course::nn::Parameter*>> optimized();
  // The replicas deal the training windows among themselves: this one's place and count.
  int data_rank() const { return grid_.coordinates().dp; }
  int data_ranks() const { return grid_.shape().dp; }
  // Windows of --batch-size a replica's step runs: the pipeline's micro-batches, or --accumulate.
  int micro_batches() const { return pipeline_.options().micro_batches; }
  bool pipelined() const { return grid_.shape().pp > 1; }

  // One step: every micro-batch of `batch` (micro_batches x batch_size windows) forward and
  // backward through the pipeline, then the stage gradients averaged over the pipelines.
  // Returns the batch's mean loss as a (1,) tensor on `device`.
  course::Tensor forward_backward(const course::NextTokenBatch& batch, course::Device device);
  void zero_grad() { pipeline_.zero_grad(); }
  // Collective: every rank's whole model (the one passed to the constructor) receives every
  // stage's and every slice's current values.
  void gather_model();

  std::string describe() const;
  // Time spent waiting for the data-parallel averages (a stage's waits for its neighbours are
  // its bubble), and the bytes this rank's steps sent: activations, gradients and averages.
  double exposed_communication_seconds() const { return averaging_seconds_; }
  double step_bytes_sent() const { return step_bytes_sent_; }
  // Collective: rank 0 draws the last step of the first pipeline's stages as a PNG, a row per
  // stage (tools/plot/timeline_chart.h).
  void write_timeline(const std::string& path, const std::string& title);
  // Collective: rank 0 prints each stage's bubble measured over the steps after the first, with
  // the schedule's formula and the micro-batches a stage held at once.
  void print_measured_bubbles();

 private:
  void average_over_replicas();

  course::nn::Gpt& whole_;
  course::parallel::ProcessGrid grid_;
  std::unique_ptr<course::parallel::TensorParallelGpt> cut_;  // with tensor parallelism
  course::parallel::PipelineParallel pipeline_;
  // Parameters applied to sequence slices: their gradients are summed over tp after each step.
  std::vector<course::nn::Parameter*> sequence_sharded_;
  int64_t steps_ = 0;
  double compute_seconds_ = 0, step_seconds_ = 0;  // steps after the first
  double averaging_seconds_ = 0, step_bytes_sent_ = 0;
};

}  // namespace day4
