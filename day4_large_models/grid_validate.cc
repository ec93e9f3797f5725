// Checks of the model-parallel grid's flags: each axis (pipeline, tensor, context) against the
// model it cuts, and the axes together against data parallelism and the memory estimate.
#include "day4_large_models/grid_validate.h"

#include <string>

#include "common/core/error.h"
#include "common/models/gpt/gpt.h"
#include "common/models/vit/vit.h"
#include "common/parallel/pipeline/pipeline_schedule.h"
#include "common/train/training_loop.h"

namespace day4 {

using namespace course;

// The pipeline axis, against the `blocks` of `model` it cuts (any family); a pipeline
// accumulates over its own micro-batches, not --accumulate's.
void validate_pipeline(const PipelineChoice& p, const std::string& model, int64_t blocks,
                       int64_t accumulate) {
  COURSE_CHECK(p.stages >= 1 && p.micro_batches >= 1 && p.virtual_stages >= 1,
               "--pipeline-stages, --micro-batches and --virtual-stages must be at least 1");
  COURSE_CHECK((p.schedule == parallel::PipelineSchedule::kInterleaved) == (p.virtual_stages > 1),
               "--schedule interleaved runs 2 or more --virtual-stages per rank; the other "
               "schedules one (got --schedule ",
               parallel::pipeline_schedule_name(p.schedule), " --virtual-stages ", p.virtual_stages,
               ")");
  COURSE_CHECK(p.timeline.empty() || p.stages > 1,
               "--timeline draws the stages of a pipeline: add --pipeline-stages 2 or more");
  const PipelineChoice defaults;
  COURSE_CHECK(p.stages > 1 ||
                   (p.micro_batches == defaults.micro_batches && p.schedule == defaults.schedule &&
                    p.virtual_stages == defaults.virtual_stages && p.balance == defaults.balance),
               "--micro-batches, --schedule, --virtual-stages and --pipeline-balance shape a "
               "pipeline: add --pipeline-stages 2 or more (or --accumulate to accumulate "
               "micro-batches on one stage)");
  COURSE_CHECK(!p.exercises || (p.stages > 1 &&
                                (p.schedule == parallel::PipelineSchedule::kGpipe ||
                                 p.schedule == parallel::PipelineSchedule::kOneForwardOneBackward)),
               "--pipeline-exercises runs your TP4.6-TP4.8 in a pipeline of --pipeline-stages "
               "2 or more with --schedule gpipe or 1f1b (got ",
               p.stages, " stages, --schedule ", parallel::pipeline_schedule_name(p.schedule), ")");
  if (!p.timeline.empty()) train::check_output_path("--timeline", p.timeline);
  if (p.stages == 1) return;
  COURSE_CHECK(accumulate == 1,
               "--pipeline-stages accumulates over its --micro-batches; leave --accumulate at 1");
  COURSE_CHECK(p.stages * p.virtual_stages <= blocks, "--pipeline-stages ", p.stages,
               " x --virtual-stages ", p.virtual_stages, " cuts ", model, "'s ", blocks,
               " blocks into stages of none");
}

// The grid's axes together: model parallelism averages plain replicas, and the memory estimate
// covers data and context parallelism only.
void validate_grid(const GridChoice& grid, const DataParallelChoice& dp,
                   const EstimateChoice& estimate) {
  COURSE_CHECK(grid.tensor_parallel >= 1, "--tensor-parallel must be at least 1");
  COURSE_CHECK(grid.context_parallel >= 1, "--context-parallel must be at least 1");
  if (grid.model_parallel()) {
    COURSE_CHECK(dp.replicated() && dp.param_dtype == DType::kF32,
                 "--tensor-parallel, --context-parallel and --pipeline-stages average the "
                 "replicas' gradients over the data-parallel ranks; they do not combine with "
                 "--sharding ",
                 dp.flag(), " or --param-dtype ", dtype_name(dp.param_dtype));
  }
  if (!grid.memory_estimated()) {
    COURSE_CHECK(!estimate.estimate_only && estimate.max_memory_mb == 0,
                 "the memory estimate covers data and context parallelism; for "
                 "--tensor-parallel and --pipeline-stages see --throughput-gpus "
                 "(bench/pipeline_bench measures pipelines)");
  }
}

// The tensor-parallel axis (and the sequence between its layers), against the language model
// it cuts.
void validate_tensor_parallel(const GridChoice& grid, const LabModel& model) {
  const nn::GptConfig& config = *model.language;
  if (grid.tensor_parallel > 1) {
    const int64_t t = grid.tensor_parallel;
    const int64_t kv = config.key_value_heads();
    const std::string grouped =
        kv < config.heads ? " (" + std::to_string(kv) + " of keys and values)" : "";
    COURSE_CHECK(config.heads % t == 0 && kv % t == 0 && config.vocabulary % t == 0,
                 "--tensor-parallel ", t, " does not split ", model.name, "'s ", config.heads,
                 " heads", grouped, " and ", config.vocabulary,
                 "-token vocabulary evenly over the ranks");
  }
  if (grid.sequence_parallel) {
    const int64_t context = model.window();
    COURSE_CHECK(grid.tensor_parallel > 1 && grid.pipeline.stages == 1,
                 "--sequence-parallel cuts the activations between tensor-parallel layers: add "
                 "--tensor-parallel 2 or more, without --pipeline-stages");
    const std::string tokens = grid.context_parallel > 1 ? "each rank's " : "windows of ";
    COURSE_CHECK(context % (grid.context_parallel * grid.tensor_parallel) == 0,
                 "--sequence-parallel cuts ", tokens, context / grid.context_parallel,
                 " tokens over --tensor-parallel ", grid.tensor_parallel,
                 " ranks: choose a --context they divide");
  }
}

// The context-parallel axis, against the language model whose windows it cuts.
void validate_context_parallel(int context_parallel, const LabModel& model) {
  if (context_parallel == 1) return;
  const int64_t cp = context_parallel, context = model.window();
  COURSE_CHECK(context % (2 * cp) == 0, "--context-parallel ", cp, " cuts each window into ",
               2 * cp, " chunks (2 per rank); a --context of ", context,
               " does not divide: choose a multiple of ", 2 * cp);
  COURSE_CHECK(!model.checkpoint_activations,
               "--context-parallel does not combine with --checkpoint-activations");
}

// An image model's tensor-parallel axis: a ViT's blocks, its tokens whole.
void validate_image_tensor_parallel(const GridChoice& grid, const LabModel& model) {
  COURSE_CHECK(!grid.sequence_parallel,
               "--sequence-parallel cuts a language model's windows; an image model's tokens "
               "stay whole (--tensor-parallel alone cuts a ViT's blocks)");
  if (grid.tensor_parallel == 1) return;
  COURSE_CHECK(model.family->traits.transformer_blocks,
               "--tensor-parallel cuts transformer blocks (gpt-..., llama-..., vit-...); ",
               model.name,
               " trains with data parallelism (DDP or --sharding) and --pipeline-stages");
  const nn::VitConfig config = nn::vit_config({.name = model.name});
  const int64_t t = grid.tensor_parallel;
  COURSE_CHECK(config.heads % t == 0 && config.mlp_width() % t == 0, "--tensor-parallel ", t,
               " does not split ", model.name, "'s ", config.heads, " heads and ",
               config.mlp_width(), "-wide MLP evenly over the ranks");
}

}  // namespace day4
