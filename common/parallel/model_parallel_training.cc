// The 3D grid's step: the stage through its schedule, the sums over tp, the averages over dp,
// and the pipeline's measurements gathered as numbers.
#include "common/parallel/model_parallel_training.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/nn/context_split.h"
#include "common/nn/piece_stages.h"
#include "common/optim/gradient_clipping.h"
#include "common/parallel/data_parallel/gradient_average.h"

namespace course::parallel {

namespace {

GridShape model_parallel_grid(const Communicator& world, int tp, int pp, int cp = 1) {
  const int replica = tp * pp * cp;
  const std::string context = cp > 1 ? "--context-parallel " + std::to_string(cp) + " x " : "";
  COURSE_CHECK(world.size() % replica == 0, context, "--tensor-parallel ", tp,
               " x --pipeline-stages ", pp, " does not divide the ", world.size(),
               " ranks of this run into model replicas (start it with mpirun -np ", replica,
               " or a multiple)");
  return {.dp = world.size() / replica, .tp = tp, .pp = pp, .cp = cp};
}

// The GPT cut over the tensor-parallel ranks and, with context parallelism, attending through
// the ring of its context-parallel ranks; none when neither axis has more than one rank.
std::unique_ptr<TensorParallelGpt> cut_gpt(nn::Gpt& model, const ProcessGrid& grid,
                                           bool sequence_parallel) {
  if (grid.shape().tp == 1 && grid.shape().cp == 1) return nullptr;
  auto cut = std::make_unique<TensorParallelGpt>(
      model, grid.tp(),
      sequence_parallel ? Activations::kSequenceSharded : Activations::kReplicated);
  if (grid.shape().cp > 1) cut->use_context_parallel(grid.cp());
  return cut;
}

// This rank's positions of a replica's windows (inputs (B, T), targets (B T,)).
NextTokenBatch context_rows(const NextTokenBatch& batch, const ProcessGrid& grid) {
  const nn::ContextSplit split{grid.coordinates().cp, grid.shape().cp};
  if (!split.active()) return batch;
  return {split.rows_of(batch.inputs), split.flat_rows_of(batch.targets, batch.inputs.size(0))};
}

// An image model's tensor-parallel ranks: its tokens are not cut along the sequence.
int image_tensor_parallel(const ModelParallelOptions& o) {
  COURSE_CHECK(o.context_parallel == 1,
               "context parallelism cuts a language model's windows; an image model's tokens "
               "stay whole");
  COURSE_CHECK(!o.sequence_parallel,
               "sequence parallelism cuts a language model's sequence; an image model's tokens "
               "stay whole (--tensor-parallel alone cuts a ViT's blocks)");
  return o.tensor_parallel;
}

// The model the stages are cut from: the whole one, or its slices on this tensor-parallel rank.
template <class Whole, class Cut>
Whole& stages_source(Whole& whole, const std::unique_ptr<Cut>& cut) {
  if (cut) return *cut;
  return whole;
}

// A stage's measurement as the numbers every rank's are gathered in: its bubble, then per
// action its kind (PipelineAction::Kind's value), micro-batch, chunk, start and end in seconds
// (f32: microseconds over a step of seconds).
constexpr int64_t kActionFields = 5;

std::vector<float> measurement_fields(float bubble, const std::vector<TimedAction>& timeline) {
  std::vector<float> fields = {bubble};
  for (const TimedAction& a : timeline) {
    fields.insert(fields.end(),
                  {static_cast<float>(a.action.kind), static_cast<float>(a.action.micro_batch),
                   static_cast<float>(a.action.chunk), static_cast<float>(a.start_s),
                   static_cast<float>(a.end_s)});
  }
  return fields;
}

std::vector<TimedAction> timed_actions(const float* fields, int64_t actions) {
  std::vector<TimedAction> out;
  for (int64_t k = 0; k < actions; ++k, fields += kActionFields) {
    const auto kind = static_cast<PipelineAction::Kind>(static_cast<int>(fields[0]));
    out.push_back({.action = {.kind = kind,
                              .micro_batch = static_cast<int>(fields[1]),
                              .chunk = static_cast<int>(fields[2])},
                   .start_s = fields[3],
                   .end_s = fields[4]});
  }
  return out;
}

// Each stage's blocks: "0-2 | 3 | 4-5".
std::string block_runs(const PipelineParallel& pipeline) {
  std::string text;
  for (const nn::StageBounds& b : pipeline.stage_bounds()) {
    if (!text.empty()) text += " | ";
    text += std::to_string(b.first_block);
    if (b.end_block - b.first_block > 1) text += "-" + std::to_string(b.end_block - 1);
  }
  return text;
}

}  // namespace

ModelParallelTraining::ModelParallelTraining(nn::Gpt& model, std::shared_ptr<Communicator> world,
                                             const ModelParallelOptions& o)
    : whole_(model),
      gpt_(&model),
      grid_(world,
            model_parallel_grid(*world, o.tensor_parallel, o.pipeline_stages, o.context_parallel)),
      cut_gpt_(cut_gpt(model, grid_, o.sequence_parallel)),
      pipeline_(stages_source<nn::GptParts>(model, cut_gpt_), grid_.pp(), o.pipeline),
      compute_(o.compute),
      sequence_sharded_(cut_gpt_ ? cut_gpt_->sequence_sharded_parameters()
                                 : std::vector<nn::Parameter*>{}) {
  if (cut_gpt_) {
    for (const nn::Parameter* p : cut_gpt_->replicated_parameters()) replicated_over_tp_.insert(p);
  }
}

ModelParallelTraining::ModelParallelTraining(nn::Module& model, const Tensor& sample,
                                             std::shared_ptr<Communicator> world,
                                             const ModelParallelOptions& o)
    : whole_(model),
      grid_(world, model_parallel_grid(*world, image_tensor_parallel(o), o.pipeline_stages)),
      cut_vit_(o.tensor_parallel > 1 ? std::make_unique<TensorParallelVit>(model, grid_.tp())
                                     : nullptr),
      pipeline_(
          std::make_unique<nn::PieceStages>(stages_source<nn::Module>(model, cut_vit_), sample),
          grid_.pp(), o.pipeline),
      compute_(o.compute) {
  if (cut_vit_) {
    for (const nn::Parameter* p : cut_vit_->replicated_parameters()) replicated_over_tp_.insert(p);
  }
}

Tensor ModelParallelTraining::forward_backward(const NextTokenBatch& batch,
                                               const std::function<void(Phase)>& mark) {
  mark(Phase::kPipeline);
  const auto bytes_sent = [&] {
    return grid_.pp()->traffic().bytes + grid_.replicas()->traffic().bytes +
           grid_.tp()->traffic().bytes + grid_.cp()->traffic().bytes;
  };
  const double bytes_before = bytes_sent();
  pipeline_.zero_grad();
  const NextTokenBatch mine = context_rows(batch, grid_);
  Tensor loss;
  {
    nn::Autocast autocast(compute_.value_or(DType::kBF16), compute_.has_value());
    pipeline_.set_loss_scale(loss_scale());
    loss = pipeline_.forward_backward(mine.inputs, mine.targets);
  }
  // Each context rank's mean over as many tokens: their mean is the replica's.
  if (grid_.shape().cp > 1) {
    loss = sum_over_ranks(loss, *grid_.cp());
    scale_(loss, 1.0f / static_cast<float>(grid_.shape().cp));
  }
  sum_gradients(sequence_sharded_, *grid_.tp());
  average_over_replicas();
  step_bytes_sent_ += bytes_sent() - bytes_before;
  return loss;
}

nn::Module& ModelParallelTraining::whole_model() {
  pipeline_.gather_model();
  if (cut_gpt_) cut_gpt_->gather_into(*gpt_);
  if (cut_vit_) cut_vit_->gather_into_whole();
  return whole_;
}

Tensor ModelParallelTraining::squared_gradient_norm() {
  std::vector<nn::Parameter*> cut, whole;
  for (nn::Parameter* p : pipeline_.parameters_counted_once()) {
    (replicated_over_tp_.count(p) > 0 ? whole : cut).push_back(p);
  }
  Tensor stage = sum_over_ranks(optim::squared_gradient_sum(cut), *grid_.tp());
  axpy_(1.0f, optim::squared_gradient_sum(whole), stage);
  return sum_over_ranks(stage, *grid_.pp());
}

void ModelParallelTraining::average_over_replicas() {
  averaging_.start();
  std::vector<nn::Parameter*> parameters;
  for (const auto& named : pipeline_.parameters()) parameters.push_back(named.second);
  average_gradients(parameters, *grid_.replicas());
  averaging_.stop();
}

nlohmann::json ModelParallelTraining::checkpoint_layout() const {
  // The whole split first (the keys are checked in order): a resume under another one is
  // refused with both named.
  return {{"grid", grid_.shape().str()},
          {"tensor_parallel", grid_.shape().tp},
          {"pipeline_stages", grid_.shape().pp},
          {"pipeline_balance", stage_balance_name(pipeline_.options().balance)}};
}

std::string ModelParallelTraining::describe() const {
  const PipelineOptions& p = pipeline_.options();
  const GridShape& shape = grid_.shape();
  std::vector<std::string> axes;
  if (shape.cp > 1) {
    axes.push_back("each window's positions cut over " + std::to_string(shape.cp) +
                   " context-parallel ranks (ring attention)");
  }
  if (shape.tp > 1) {
    axes.push_back("every layer cut over " + std::to_string(shape.tp) + " tensor-parallel ranks" +
                   (sequence_sharded_.empty() ? "" : " (and the sequence between)"));
  }
  if (shape.pp > 1) {
    axes.push_back(
        std::to_string(shape.pp) + "-stage pipeline (" + pipeline_schedule_name(p.schedule) + ", " +
        std::to_string(p.micro_batches) + " micro-batches, " +
        (p.virtual_stages > 1 ? std::to_string(p.virtual_stages) + " chunks per rank, " : "") +
        (p.hooks.cut ? "cut by the exercises" : "cut by " + stage_balance_name(p.balance)) +
        ": blocks " + block_runs(pipeline_) + (p.hooks.any() ? ", the exercises' schedule" : "") +
        ")");
  }
  if (shape.dp > 1) {
    axes.push_back(std::to_string(shape.dp) + " data-parallel " +
                   (shape.pp > 1 ? "pipelines" : "replicas"));
  }
  std::string text;
  for (const std::string& axis : axes) text += (text.empty() ? "" : " x ") + axis;
  return text;
}

std::optional<PipelineMeasurement> ModelParallelTraining::pipeline_measurement() {
  if (grid_.shape().pp == 1) return std::nullopt;
  Communicator& world = *grid_.world();
  const PipelineTotals totals = pipeline_.measured_totals();
  const float bubble = totals.step_seconds > 0
                           ? static_cast<float>(1.0 - totals.compute_seconds / totals.step_seconds)
                           : -1.0f;
  // Every rank runs as many actions as the others (m forwards and m backwards per chunk).
  const std::vector<float> mine = measurement_fields(bubble, pipeline_.timeline());
  const auto per_rank = static_cast<int64_t>(mine.size());
  Tensor gathered = Tensor::empty({per_rank * world.size()}, DType::kF32, Device::cpu());
  world.all_gather(Tensor::from_vector(mine, {per_rank}), gathered)->wait();
  const std::vector<float> fields = gathered.to_vector<float>();
  const PipelineOptions& p = pipeline_.options();
  PipelineMeasurement measured{.schedule = p.schedule,
                               .micro_batches = p.micro_batches,
                               .virtual_stages = p.virtual_stages,
                               .steps_measured = totals.steps};
  const int stages = grid_.shape().pp;
  for (int s = 0; s < stages; ++s) {
    const int rank = grid_.world_rank({.dp = 0, .tp = 0, .pp = s});
    const float* theirs = fields.data() + rank * per_rank;
    measured.stages.push_back(
        {.world_rank = rank,
         .bubble = theirs[0],
         .micro_batches_in_flight = micro_batches_in_flight(
             schedule_actions(p.schedule, s, stages, p.micro_batches, p.virtual_stages)),
         .last_step = timed_actions(theirs + 1, (per_rank - 1) / kActionFields)});
  }
  return measured;
}

}  // namespace course::parallel
