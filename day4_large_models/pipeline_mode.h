// The GPT lab's pipeline parallelism (--pipeline-stages P): the job's ranks as a process grid of
// dp x pp = (world / P) x P, each rank training one stage of the model
// (common/parallel/pipeline_parallel.h) over the micro-batches of its pipeline's batch, the
// pipelines' stage gradients averaged over the data-parallel axis (2D parallelism: DP x PP).
// Validation and sampling use the whole model, gathered from the stages on every rank.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/data/token_windows.h"
#include "common/nn/gpt.h"
#include "common/parallel/pipeline_parallel.h"
#include "common/parallel/process_grid.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

class PipelineMode {
 public:
  // Collective over `world`, whose size must be a multiple of options.pipeline_stages.
  PipelineMode(course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> world,
               const GptLabOptions& options);

  // This rank's stage parameters, named as in the whole model: the optimizer's and the
  // checkpoint's.
  std::vector<std::pair<std::string, course::nn::Parameter*>> optimized();
  // The pipelines deal the training windows among themselves: this pipeline's place and count.
  int data_rank() const { return grid_.coordinates().dp; }
  int data_ranks() const { return grid_.shape().dp; }

  // One step: every micro-batch of `batch` (micro_batches x batch_size windows) forward and
  // backward through the pipeline, then the stage gradients averaged over the pipelines.
  // Returns the batch's mean loss as a (1,) tensor on `device`.
  course::Tensor forward_backward(const course::NextTokenBatch& batch, course::Device device);
  void zero_grad() { pipeline_.zero_grad(); }
  // Every rank's model receives every stage's current values (collective).
  void gather_model() { pipeline_.gather_model(); }

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
  void average_over_pipelines();

  course::parallel::ProcessGrid grid_;
  course::parallel::PipelineParallel pipeline_;
  int64_t steps_ = 0;
  double compute_seconds_ = 0, step_seconds_ = 0;  // steps after the first
  double averaging_seconds_ = 0, step_bytes_sent_ = 0;
};

}  // namespace day4
