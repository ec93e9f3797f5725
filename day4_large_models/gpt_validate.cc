// Checks of the GPT lab's flags that their parsing cannot make: ranges, and the combinations
// of precision, data parallelism and model parallelism the lab runs.
#include <string_view>

#include "common/core/error.h"
#include "common/nn/gpt.h"
#include "common/nn/model_registry.h"
#include "common/nn/models.h"
#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

using namespace course;

namespace {

// Whether `o` reads the image models' data as `other` does (--data-dir, --image-size,
// --test-subset).
bool same_image_data(const GptLabOptions& o, const GptLabOptions& other) {
  return o.image_dir == other.image_dir && o.image_size == other.image_size &&
         o.test_subset == other.test_subset;
}

// 16-bit compute and the sharded modes.
void validate_data_parallel(const GptLabOptions& o) {
  COURSE_CHECK(!o.cpu_offload || o.data_parallel.library.has_value(),
               "--cpu-offload moves the shards of a sharded mode to host memory; choose "
               "--sharding zero1, zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
  COURSE_CHECK(!(o.amp && o.amp_dtype == DType::kF16) && o.param_dtype != DType::kF16,
               "day 4 computes in f32 or bf16 (--amp --amp-dtype bf16, --param-dtype bf16): f16 "
               "needs a loss scaler (day 1's TP1.2), without which the gradients underflow to "
               "zero");
  if (o.param_dtype != DType::kF32) {
    const std::string_view name = dtype_name(o.param_dtype);
    COURSE_CHECK(o.data_parallel.library.has_value(), "--param-dtype ", name,
                 " gathers 16-bit copies of a sharded mode's f32 shards; choose --sharding zero1, "
                 "zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
    COURSE_CHECK(o.amp && o.amp_dtype == o.param_dtype, "--param-dtype ", name, " computes in ",
                 name, ": add --amp --amp-dtype ", name);
  }
  if (!o.data_parallel.replicated()) {
    COURSE_CHECK(optim::updates_elementwise(o.optimizer), "--sharding ", sharding_flag(o),
                 " updates each rank's shard on its own, which needs an element-wise optimizer "
                 "(sgd, adamw, lion); ",
                 optim::optimizer_name(o.optimizer), "'s trust ratio spans whole parameters");
  }
}

// The optimizer's own flags, and what the 1-bit optimizers need: plain data parallelism (they
// average their momentum over its ranks in place of the gradients) and no clipping by global
// norm (no rank holds the averaged gradient after the warm-up).
void validate_optimizer(const GptLabOptions& o) {
  const char* name = optim::optimizer_name(o.optimizer);
  COURSE_CHECK(optim::has_betas(o.optimizer) || !(o.beta1 || o.beta2),
               "--beta1 and --beta2 are the Adam family's (adamw, lamb, lion, onebit-adam, "
               "onebit-lamb); --optimizer ",
               name, " has none");
  COURSE_CHECK(optim::has_eps(o.optimizer) || !o.eps,
               "--eps is Adam's (adamw, lamb, onebit-adam, onebit-lamb); --optimizer ", name,
               " has none");
  for (const std::optional<float>& beta : {o.beta1, o.beta2}) {
    COURSE_CHECK(!beta || (*beta >= 0 && *beta < 1), "--beta1 and --beta2 must be in [0, 1), got ",
                 beta.value_or(0));
  }
  COURSE_CHECK(!o.eps || *o.eps > 0, "--eps must be positive, got ", o.eps.value_or(0));
  COURSE_CHECK(o.lr_decay_steps >= 0 && o.train_batch_size >= 0,
               "--lr-decay-steps and --train-batch-size must not be negative");
  if (o.optimizer_in_backward) {
    COURSE_CHECK(!optim::is_onebit(o.optimizer),
                 "--optimizer-in-backward updates the "
                 "parameters group by group; --optimizer ",
                 name, " averages its whole momentum at once");
    COURSE_CHECK(!o.clip_grad_norm,
                 "--optimizer-in-backward updates each parameter before the "
                 "others' gradients exist; --clip-grad-norm needs the norm of all of them first");
    COURSE_CHECK(o.data_parallel.replicated() && !model_parallel(o),
                 "--optimizer-in-backward runs under DDP or on one process: leave --sharding "
                 "none and --tensor-parallel, --context-parallel and --pipeline-stages at 1");
  }
  COURSE_CHECK(!o.freeze_step || optim::is_onebit(o.optimizer),
               "--freeze-step is the 1-bit optimizers' warm-up; --optimizer ", name, " has none");
  if (!optim::is_onebit(o.optimizer)) return;
  COURSE_CHECK(o.freeze_step.value_or(1) >= 1,
               "--freeze-step must be at least 1: the 1-bit optimizers freeze "
               "the variance their warm-up estimated, got ",
               *o.freeze_step);
  COURSE_CHECK(o.data_parallel.replicated(), "--optimizer ", name,
               " averages its momentum over the data-parallel ranks in place of DDP's gradients; "
               "it needs --sharding none (DeepSpeed's 1-bit optimizers run at ZeRO stage 0 too)");
  COURSE_CHECK(!model_parallel(o), "--optimizer ", name,
               " runs under data parallelism alone: leave --tensor-parallel, "
               "--context-parallel and --pipeline-stages at 1");
  COURSE_CHECK(!o.clip_grad_norm,
               "--clip-grad-norm needs the gradients averaged over the ranks, "
               "which no rank holds once --optimizer ",
               name, " keeps them local after --freeze-step");
}

// The step replayed as a graph: one process's whole step, the same work every step. The clip
// reads each step's norm on the host for its log, the optimizer in backward and the 1-bit ones
// decide on the host as the step runs, and model parallelism exchanges with other ranks.
void validate_cuda_graphs(const GptLabOptions& o) {
  if (!o.cuda_graphs) return;
  COURSE_CHECK(!o.clip_grad_norm && !o.optimizer_in_backward && !optim::is_onebit(o.optimizer),
               "--cuda-graphs replays the same device work every step: it does not take "
               "--clip-grad-norm (its norm is read for the log), --optimizer-in-backward or the "
               "1-bit optimizers (their steps change as they run)");
  COURSE_CHECK(!model_parallel(o),
               "--cuda-graphs captures one process's step: leave "
               "--tensor-parallel, --context-parallel and --pipeline-stages at 1");
}

// The pipeline axis, against the `blocks` of the model it cuts (any family).
void validate_pipeline(const GptLabOptions& o, int64_t blocks) {
  COURSE_CHECK(o.pipeline_stages >= 1 && o.micro_batches >= 1 && o.virtual_stages >= 1,
               "--pipeline-stages, --micro-batches and --virtual-stages must be at least 1");
  COURSE_CHECK((o.schedule == parallel::PipelineSchedule::kInterleaved) == (o.virtual_stages > 1),
               "--schedule interleaved runs 2 or more --virtual-stages per rank; the other "
               "schedules one (got --schedule ",
               parallel::pipeline_schedule_name(o.schedule), " --virtual-stages ", o.virtual_stages,
               ")");
  COURSE_CHECK(o.timeline.empty() || o.pipeline_stages > 1,
               "--timeline draws the stages of a pipeline: add --pipeline-stages 2 or more");
  const GptLabOptions defaults;
  COURSE_CHECK(o.pipeline_stages > 1 ||
                   (o.micro_batches == defaults.micro_batches && o.schedule == defaults.schedule &&
                    o.virtual_stages == defaults.virtual_stages &&
                    o.pipeline_balance == defaults.pipeline_balance),
               "--micro-batches, --schedule, --virtual-stages and --pipeline-balance shape a "
               "pipeline: add --pipeline-stages 2 or more (or --accumulate to accumulate "
               "micro-batches on one stage)");
  COURSE_CHECK(
      !o.pipeline_exercises || (o.pipeline_stages > 1 &&
                                (o.schedule == parallel::PipelineSchedule::kGpipe ||
                                 o.schedule == parallel::PipelineSchedule::kOneForwardOneBackward)),
      "--pipeline-exercises runs your TP4.6-TP4.8 in a pipeline of --pipeline-stages "
      "2 or more with --schedule gpipe or 1f1b (got ",
      o.pipeline_stages, " stages, --schedule ", parallel::pipeline_schedule_name(o.schedule), ")");
  if (!o.timeline.empty()) train::check_output_path("--timeline", o.timeline);
  COURSE_CHECK(o.tensor_parallel >= 1, "--tensor-parallel must be at least 1");
  COURSE_CHECK(o.context_parallel >= 1, "--context-parallel must be at least 1");
  if (model_parallel(o)) {
    COURSE_CHECK(o.data_parallel.replicated() && o.param_dtype == DType::kF32,
                 "--tensor-parallel, --context-parallel and --pipeline-stages average the "
                 "replicas' gradients over the data-parallel ranks; they do not combine with "
                 "--sharding ",
                 sharding_flag(o), " or --param-dtype ", dtype_name(o.param_dtype));
  }
  if (!memory_estimated(o)) {
    COURSE_CHECK(!o.estimate_only && o.max_memory_mb == 0,
                 "the memory estimate covers data and context parallelism; for "
                 "--tensor-parallel and --pipeline-stages see --throughput-gpus "
                 "(bench/pipeline_bench measures pipelines)");
  }
  if (o.pipeline_stages > 1) {
    COURSE_CHECK(o.accumulate == 1,
                 "--pipeline-stages accumulates over its --micro-batches; "
                 "leave --accumulate at 1");
    COURSE_CHECK(o.pipeline_stages * o.virtual_stages <= blocks, "--pipeline-stages ",
                 o.pipeline_stages, " x --virtual-stages ", o.virtual_stages, " cuts ", o.model,
                 "'s ", blocks, " blocks into stages of none");
  }
}

// The tensor-parallel axis (and the sequence between its layers), against the language model
// it cuts.
void validate_tensor_parallel(const GptLabOptions& o, const nn::GptConfig& config) {
  if (o.tensor_parallel > 1) {
    const int64_t t = o.tensor_parallel;
    const int64_t kv = config.key_value_heads();
    const std::string grouped =
        kv < config.heads ? " (" + std::to_string(kv) + " of keys and values)" : "";
    COURSE_CHECK(config.heads % t == 0 && kv % t == 0 && config.vocabulary % t == 0,
                 "--tensor-parallel ", t, " does not split ", o.model, "'s ", config.heads,
                 " heads", grouped, " and ", config.vocabulary,
                 "-token vocabulary evenly over the ranks");
  }
  if (o.sequence_parallel) {
    const int64_t context = o.context > 0 ? o.context : config.context;
    COURSE_CHECK(o.tensor_parallel > 1 && o.pipeline_stages == 1,
                 "--sequence-parallel cuts the activations between tensor-parallel layers: add "
                 "--tensor-parallel 2 or more, without --pipeline-stages");
    const std::string tokens = o.context_parallel > 1 ? "each rank's " : "windows of ";
    COURSE_CHECK(context % (o.context_parallel * o.tensor_parallel) == 0,
                 "--sequence-parallel cuts ", tokens, context / o.context_parallel,
                 " tokens over --tensor-parallel ", o.tensor_parallel,
                 " ranks: choose a --context they divide");
  }
}

// The context-parallel axis, against the language model whose windows it cuts.
void validate_context_parallel(const GptLabOptions& o, const nn::GptConfig& config) {
  if (o.context_parallel == 1) return;
  const int64_t cp = o.context_parallel, context = o.context > 0 ? o.context : config.context;
  COURSE_CHECK(context % (2 * cp) == 0, "--context-parallel ", cp, " cuts each window into ",
               2 * cp, " chunks (2 per rank); a --context of ", context,
               " does not divide: choose a multiple of ", 2 * cp);
  COURSE_CHECK(!o.checkpoint_activations,
               "--context-parallel does not combine with --checkpoint-activations");
}

// An image model's tensor-parallel axis: a ViT's blocks, its tokens whole.
void validate_image_tensor_parallel(const GptLabOptions& o) {
  COURSE_CHECK(!o.sequence_parallel,
               "--sequence-parallel cuts a language model's windows; an image model's tokens "
               "stay whole (--tensor-parallel alone cuts a ViT's blocks)");
  if (o.tensor_parallel == 1) return;
  COURSE_CHECK(nn::family_traits(nn::model_family(o.model)).transformer_blocks,
               "--tensor-parallel cuts transformer blocks (gpt-..., llama-..., vit-...); ", o.model,
               " trains with data parallelism (DDP or --sharding) and --pipeline-stages");
  const nn::VitConfig config = nn::vit_config({.name = o.model});
  const int64_t t = o.tensor_parallel;
  COURSE_CHECK(config.heads % t == 0 && config.mlp_width() % t == 0, "--tensor-parallel ", t,
               " does not split ", o.model, "'s ", config.heads, " heads and ", config.mlp_width(),
               "-wide MLP evenly over the ranks");
}

// An image model's run on its images: data parallelism, pipeline stages and, for a
// ViT, tensor parallelism.
void validate_image_run(const GptLabOptions& o) {
  COURSE_CHECK(o.context_parallel == 1, "--context-parallel cuts a language model's windows; ",
               o.model, "'s tokens stay whole");
  validate_image_tensor_parallel(o);
  validate_pipeline(o, static_cast<int64_t>(nn::model_pieces({.name = o.model}).blocks.size()));
  COURSE_CHECK(!o.data_parallel.trainee_zero1, "--sharding ", kExerciseZero1,
               " runs the trainee's ZeRO-1 on the GPT; ", o.model,
               " takes the library's strategies (zero1, zero2, zero3, shard-grad-op, ...)");
  const GptLabOptions text_defaults;
  COURSE_CHECK(o.text_dir == text_defaults.text_dir && o.context == text_defaults.context &&
                   o.val_fraction == text_defaults.val_fraction &&
                   o.sample_tokens == text_defaults.sample_tokens &&
                   o.prompt == text_defaults.prompt &&
                   o.sampling.temperature == text_defaults.sampling.temperature &&
                   o.sampling.top_k == text_defaults.sampling.top_k &&
                   o.sampling.top_p == text_defaults.sampling.top_p,
               "--text-dir, --context, --val-fraction, --sample-tokens, --prompt, --temperature, "
               "--top-k and --top-p feed the language models; ",
               o.model, " is an image model and trains on --data-dir's images");
  COURSE_CHECK(o.throughput_gpus >= 0, "--throughput-gpus must not be negative");
  const GptLabOptions image_defaults;
  if (o.estimate_only || o.throughput_gpus > 0) {
    COURSE_CHECK(same_image_data(o, image_defaults), "--estimate-only and --throughput-gpus take ",
                 o.model,
                 " at its preset's own size; --data-dir, --image-size and --test-subset are for "
                 "training");
    return;
  }
  const int64_t smallest = nn::min_image_size(o.model);
  COURSE_CHECK(o.image_size >= smallest, "--image-size ", o.image_size, " is too small for ",
               o.model, " (at least ", smallest, ")");
}

}  // namespace

bool model_parallel(const GptLabOptions& o) {
  return o.tensor_parallel > 1 || o.pipeline_stages > 1 || o.context_parallel > 1;
}

bool memory_estimated(const GptLabOptions& o) {
  return o.tensor_parallel == 1 && o.pipeline_stages == 1;
}

void validate(const GptLabOptions& o) {
  train::validate_run_flags(o);
  COURSE_CHECK(o.steps_per_epoch >= 0 && o.warmup_steps >= 0 && o.sample_tokens >= 0,
               "--steps-per-epoch, --warmup-steps and --sample-tokens must not be negative");
  COURSE_CHECK(o.comm_timeout > 0, "--comm-timeout must be positive, got ", o.comm_timeout);
  validate_optimizer(o);
  validate_data_parallel(o);
  validate_cuda_graphs(o);
  COURSE_CHECK(o.tensor_parallel == 1 || !o.checkpoint_activations,
               "--tensor-parallel cuts the blocks' layers; it does not combine with "
               "--checkpoint-activations");
  if (image_model(o)) {
    validate_image_run(o);
    return;
  }
  const GptLabOptions image_defaults;
  COURSE_CHECK(same_image_data(o, image_defaults),
               "--data-dir, --image-size and --test-subset feed the image models (vit-..., "
               "coatnet-...); ",
               o.model, " reads --text-dir");
  const nn::GptConfig config = nn::gpt_preset(o.model);
  COURSE_CHECK(o.context >= 0 && o.context <= config.context, "--context ", o.context,
               " must be between 1 and ", o.model, "'s context of ", config.context);
  COURSE_CHECK(o.val_fraction > 0 && o.val_fraction < 1, "--val-fraction must be in (0, 1), got ",
               o.val_fraction);
  nn::check_sampling(o.sampling);
  COURSE_CHECK(!o.prompt.empty(), "--prompt must not be empty");
  const int64_t window = o.context > 0 ? o.context : config.context;
  COURSE_CHECK(static_cast<int64_t>(o.prompt.size()) <= window, "--prompt holds ", o.prompt.size(),
               " byte tokens, more than ", o.model, "'s window of ", window,
               ": the sample would start from its last ", window,
               " only (the generation "
               "engine refuses it too)");
  COURSE_CHECK(o.max_memory_mb >= 0 && o.estimate_ranks >= 0 && o.shard_group_size >= 0,
               "--max-memory-mb, --estimate-ranks and --shard-group-size must not be negative");
  validate_pipeline(o, config.layers);
  validate_tensor_parallel(o, config);
  validate_context_parallel(o, config);
  COURSE_CHECK(o.throughput_gpus >= 0, "--throughput-gpus must not be negative");
  if (o.estimate_only || o.throughput_gpus > 0) return;  // any preset: nothing is trained
  COURSE_CHECK(config.vocabulary == kByteVocabulary, o.model, " has a vocabulary of ",
               config.vocabulary, " tokens; the lab's byte-level text needs ", kByteVocabulary,
               " (gpt-tiny)");
}

void validate_run_ranks(const GptLabOptions& o, int ranks) {
  COURSE_CHECK(o.data_parallel.replicated() || ranks > 1, "--sharding ", sharding_flag(o),
               " shards over the data-parallel ranks and needs at least 2; this run has 1 "
               "(start it with mpirun -np N, or srun)");
  COURSE_CHECK(!o.cuda_graphs || ranks == 1,
               "--cuda-graphs captures one process's step; this run "
               "has ",
               ranks,
               " ranks, whose collectives the graph would not replay (run it "
               "without mpirun, or leave --cuda-graphs out)");
}

void validate_grid_ranks(const GptLabOptions& o, int ranks) {
  const int64_t grid = o.context_parallel * o.tensor_parallel * o.pipeline_stages;
  COURSE_CHECK(ranks > 0 && ranks % grid == 0, ranks, " ranks",
               o.estimate_ranks > 0 ? " (--estimate-ranks)" : "",
               " do not cut into --context-parallel ", o.context_parallel, " x --tensor-parallel ",
               o.tensor_parallel, " x --pipeline-stages ", o.pipeline_stages, " = ", grid,
               " ranks per replica");
}

void validate_train_batch(const GptLabOptions& o, int64_t micro_batches, int data_ranks) {
  const int64_t step = o.batch_size * micro_batches * data_ranks;
  COURSE_CHECK(o.train_batch_size == 0 || o.train_batch_size == step, "--train-batch-size ",
               o.train_batch_size, " (DeepSpeed's train_batch_size) is not --batch-size ",
               o.batch_size, " x ", micro_batches, " micro-batch(es) x ", data_ranks,
               " data-parallel rank(s) = ", step);
}

}  // namespace day4
