// The lab's model parallelism: the grid, a step through the stage, the average over replicas,
// and the measured bubbles.
#include "day4_large_models/model_parallel_mode.h"

#include <chrono>
#include <cstdio>

#include "common/nn/autocast.h"
#include "common/parallel/gradient_average.h"
#include "tools/plot/timeline_chart.h"

namespace day4 {

using namespace course;

namespace {

parallel::GridShape model_parallel_grid(const parallel::Communicator& world, int tp, int pp) {
  COURSE_CHECK(world.size() % (tp * pp) == 0, "--tensor-parallel ", tp, " x --pipeline-stages ", pp,
               " does not divide the ", world.size(),
               " ranks of this run into model replicas (start it with mpirun -np ", tp * pp,
               " or a multiple)");
  return {.dp = world.size() / (tp * pp), .tp = tp, .pp = pp};
}

// The model the stages are cut from: the whole one, or its slices on this tensor-parallel rank.
nn::GptParts& parts(nn::Gpt& whole, const std::unique_ptr<parallel::TensorParallelGpt>& cut) {
  if (cut) return *cut;
  return whole;
}

// A timed action as the numbers every rank's are gathered in: kind (0 forward), micro-batch,
// chunk, start and end in seconds (f32: microseconds over a step of seconds).
constexpr int64_t kActionFields = 5;

std::vector<float> action_fields(const std::vector<parallel::TimedAction>& timeline) {
  std::vector<float> fields;
  fields.reserve(timeline.size() * kActionFields);
  for (const parallel::TimedAction& a : timeline) {
    fields.insert(fields.end(),
                  {a.action.kind == parallel::PipelineAction::Kind::kForward ? 0.0f : 1.0f,
                   static_cast<float>(a.action.micro_batch), static_cast<float>(a.action.chunk),
                   static_cast<float>(a.start_s), static_cast<float>(a.end_s)});
  }
  return fields;
}

}  // namespace

ModelParallelMode::ModelParallelMode(nn::Gpt& model, std::shared_ptr<parallel::Communicator> world,
                                     const GptLabOptions& o)
    : whole_(model),
      grid_(world, model_parallel_grid(*world, o.tensor_parallel, o.pipeline_stages)),
      cut_(o.tensor_parallel > 1 ? std::make_unique<parallel::TensorParallelGpt>(
                                       model, grid_.tp(),
                                       o.sequence_parallel ? parallel::Activations::kSequenceSharded
                                                           : parallel::Activations::kReplicated)
                                 : nullptr),
      pipeline_(parts(model, cut_), grid_.pp(),
                {.schedule = parallel::parse_pipeline_schedule(o.schedule),
                 .micro_batches =
                     o.pipeline_stages > 1 ? o.micro_batches : static_cast<int>(o.accumulate),
                 .balance = o.pipeline_balance,
                 .virtual_stages = o.virtual_stages}),
      sequence_sharded_(cut_ ? cut_->sequence_sharded_parameters()
                             : std::vector<nn::Parameter*>{}) {}

std::vector<std::pair<std::string, nn::Parameter*>> ModelParallelMode::optimized() {
  return pipeline_.parameters();
}

Tensor ModelParallelMode::forward_backward(const NextTokenBatch& batch, Device device) {
  const auto bytes_sent = [&] {
    return grid_.pp()->traffic().bytes + grid_.dp()->traffic().bytes + grid_.tp()->traffic().bytes;
  };
  const double bytes_before = bytes_sent();
  const float loss = pipeline_.forward_backward(batch.inputs, batch.targets);
  if (steps_++ > 0) {
    step_seconds_ += pipeline_.step_seconds();
    for (const parallel::TimedAction& a : pipeline_.timeline()) {
      compute_seconds_ += a.end_s - a.start_s;
    }
  }
  parallel::sum_gradients(sequence_sharded_, *grid_.tp());
  average_over_replicas();
  step_bytes_sent_ += bytes_sent() - bytes_before;
  return Tensor::from_vector<float>({loss}, {1}).to(device);
}

void ModelParallelMode::gather_model() {
  pipeline_.gather_model();
  if (cut_) cut_->gather_into(whole_);
}

void ModelParallelMode::average_over_replicas() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<nn::Parameter*> parameters;
  for (const auto& named : pipeline_.parameters()) parameters.push_back(named.second);
  parallel::average_gradients(parameters, *grid_.dp());
  averaging_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string ModelParallelMode::describe() const {
  const parallel::PipelineOptions& p = pipeline_.options();
  const parallel::GridShape& shape = grid_.shape();
  std::vector<std::string> axes;
  if (shape.tp > 1) {
    axes.push_back("every layer cut over " + std::to_string(shape.tp) + " tensor-parallel ranks" +
                   (sequence_sharded_.empty() ? "" : " (and the sequence between)"));
  }
  if (shape.pp > 1) {
    axes.push_back(
        std::to_string(shape.pp) + "-stage pipeline (" +
        parallel::pipeline_schedule_name(p.schedule) + ", " + std::to_string(p.micro_batches) +
        " micro-batches, " +
        (p.virtual_stages > 1 ? std::to_string(p.virtual_stages) + " chunks per rank, " : "") +
        "cut by " + p.balance + ")");
  }
  if (shape.dp > 1) {
    axes.push_back(std::to_string(shape.dp) + " data-parallel " +
                   (shape.pp > 1 ? "pipelines" : "replicas"));
  }
  std::string text;
  for (const std::string& axis : axes) text += (text.empty() ? "" : " x ") + axis;
  return text;
}

void ModelParallelMode::write_timeline(const std::string& path, const std::string& title) {
  parallel::Communicator& world = *grid_.world();
  // Every rank runs as many actions as the others (m forwards and m backwards per chunk).
  const std::vector<float> mine = action_fields(pipeline_.timeline());
  const auto per_rank = static_cast<int64_t>(mine.size());
  Tensor gathered = Tensor::empty({per_rank * world.size()}, DType::kF32, Device::cpu());
  world.all_gather(Tensor::from_vector(mine, {per_rank}), gathered)->wait();
  if (world.rank() != 0) return;
  const std::vector<float> fields = gathered.to_vector<float>();
  plot::TimelineChart chart{.title = title, .kinds = {"forward", "backward"}};
  const bool chunks = pipeline_.options().virtual_stages > 1;
  for (int s = 0; s < grid_.shape().pp; ++s) {
    const int rank = grid_.world_rank({.dp = 0, .tp = 0, .pp = s});
    chart.lanes.push_back("stage " + std::to_string(s) + " (rank " + std::to_string(rank) + ")");
    for (int64_t k = rank * per_rank; k < (rank + 1) * per_rank; k += kActionFields) {
      const int kind = static_cast<int>(fields[k]);
      std::string label = (kind == 0 ? "F" : "B") + std::to_string(static_cast<int>(fields[k + 1]));
      if (chunks) label += "c" + std::to_string(static_cast<int>(fields[k + 2]));
      chart.spans.push_back({s, fields[k + 3], fields[k + 4], kind, label});
    }
  }
  plot::write_timeline_png(chart, path);
  std::printf("pipeline timeline of the last step written to %s\n", path.c_str());
}

void ModelParallelMode::print_measured_bubbles() {
  parallel::Communicator& world = *grid_.world();
  const float bubble = step_seconds_ > 0 ? 1.0f - compute_seconds_ / step_seconds_ : -1.0f;
  const Tensor mine = Tensor::from_vector<float>({bubble}, {1});
  Tensor all = Tensor::empty({world.size()}, DType::kF32, Device::cpu());
  world.all_gather(mine, all)->wait();
  if (world.rank() != 0 || steps_ < 2) return;
  const parallel::PipelineOptions& p = pipeline_.options();
  const int stages = grid_.shape().pp, v = p.virtual_stages;
  const char* formula = p.schedule == parallel::PipelineSchedule::kNaive ? "(p-1)/p"
                        : v > 1                                          ? "(p-1)/(v m+p-1)"
                                                                         : "(p-1)/(m+p-1)";
  std::printf(
      "pipeline bubble (idle share of a step, %lld steps after the first; formula %s %.3f):\n",
      static_cast<long long>(steps_ - 1), formula,
      parallel::bubble_fraction(p.schedule, stages, p.micro_batches, v));
  const std::vector<float> bubbles = all.to_vector<float>();
  for (int s = 0; s < stages; ++s) {
    const int in_flight = parallel::micro_batches_in_flight(
        parallel::schedule_actions(p.schedule, s, stages, p.micro_batches, v));
    std::printf("  stage %d: %.3f measured, at most %d micro-batch(es) of activations held", s,
                bubbles[grid_.world_rank({.dp = 0, .tp = 0, .pp = s})], in_flight);
    if (v > 1) std::printf(" (each through one chunk, 1/%d of the stage)", v);
    std::printf("\n");
  }
}

}  // namespace day4
