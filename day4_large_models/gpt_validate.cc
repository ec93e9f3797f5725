// Checks of the GPT lab's flags that their parsing cannot make: ranges, and the combinations
// of precision, data parallelism and model parallelism the lab runs. Each check takes the parts
// of the options it judges; validate() runs them for the run's model.
#include <string_view>

#include "common/core/error.h"
#include "common/core/launch_rank.h"
#include "common/models/gpt/gpt.h"
#include "common/models/model_registry.h"
#include "common/models/models.h"
#include "common/parallel/planning/megatron_table.h"
#include "common/train/deepspeed_config.h"
#include "common/train/loss_scaling.h"
#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"
#include "day4_large_models/grid_validate.h"

namespace day4 {

using namespace course;

namespace {

// DeepSpeed's stage-3 keys, for the strategies that free parameters between uses.
void validate_stage3_fetching(const DataParallelChoice& dp) {
  const parallel::ZeroCommunication& c = dp.communication;
  const bool live_given = c.max_live_elements != parallel::ZeroCommunication{}.max_live_elements;
  const bool given = c.prefetch_bucket_elements || c.persistence_threshold != 0 || live_given;
  const bool frees = dp.library && parallel::policy_of(*dp.library).reshard_after_backward;
  COURSE_CHECK(!given || frees,
               "--prefetch-bucket-size, --max-live-parameters and --param-persistence-threshold "
               "are for the strategies that free parameters between uses (zero3, "
               "shard-grad-op, hybrid-shard); --sharding ",
               dp.flag(), " keeps every parameter gathered");
  COURSE_CHECK(c.prefetch_bucket_elements.value_or(0) >= 0 && c.max_live_elements >= 0 &&
                   c.persistence_threshold >= 0,
               "--prefetch-bucket-size, --max-live-parameters and --param-persistence-threshold "
               "must not be negative");
  COURSE_CHECK(!c.prefetch_bucket_elements || !dp.forward_prefetch,
               "--prefetch-bucket-size is DeepSpeed's prefetch in both passes; it replaces "
               "--forward-prefetch");
  COURSE_CHECK(!live_given || c.prefetch_bucket_elements,
               "--max-live-parameters bounds DeepSpeed's prefetch: add --prefetch-bucket-size");
}

// DeepSpeed's bucket and overlap flags, where the mode has them.
void validate_zero_communication(const DataParallelChoice& dp) {
  const parallel::ZeroCommunication& c = dp.communication;
  COURSE_CHECK(c.reduce_bucket_elements >= 0 && c.allgather_bucket_elements >= 0,
               "--reduce-bucket-size and --allgather-bucket-size must not be negative");
  const bool sharded = dp.library && *dp.library != parallel::Sharding::kNoShard;
  COURSE_CHECK(sharded || (c.overlap && c.reduce_scatter && c.allgather_bucket_elements == 0),
               "--no-overlap-comm, --no-reduce-scatter and --allgather-bucket-size are the "
               "sharded modes' (zero1, zero2, zero3, shard-grad-op, hybrid-shard); --sharding ",
               dp.flag(), " has none of them");
  COURSE_CHECK(c.reduce_bucket_elements == 0 || sharded || !dp.trainee_zero1,
               "--reduce-bucket-size: exercise-zero1 reduces with your own TP4.2");
  const bool gathers_after_step =
      dp.library == parallel::Sharding::kZero1 || dp.library == parallel::Sharding::kZero2;
  COURSE_CHECK(c.allgather_bucket_elements == 0 || gathers_after_step,
               "--allgather-bucket-size sizes the gather after the step of zero1 and zero2; "
               "--sharding ",
               dp.flag(), " gathers each block before its use");
  validate_stage3_fetching(dp);
}

// 16-bit compute and the sharded modes, for the run's precision and optimizer.
void validate_data_parallel(const DataParallelChoice& dp, const train::RunFlags& run,
                            optim::OptimizerKind optimizer) {
  COURSE_CHECK(!dp.cpu_offload || dp.library.has_value(),
               "--cpu-offload moves the shards of a sharded mode to host memory; choose "
               "--sharding zero1, zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
  if (dp.param_dtype != DType::kF32) {
    const std::string_view name = dtype_name(dp.param_dtype);
    COURSE_CHECK(dp.library.has_value(), "--param-dtype ", name,
                 " gathers 16-bit copies of a sharded mode's f32 shards; choose --sharding zero1, "
                 "zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
    COURSE_CHECK(run.amp && run.amp_dtype == dp.param_dtype, "--param-dtype ", name,
                 " computes in ", name, ": add --amp --amp-dtype ", name);
  }
  validate_zero_communication(dp);
  if (!dp.replicated()) {
    COURSE_CHECK(optim::updates_elementwise(optimizer), "--sharding ", dp.flag(),
                 " updates each rank's shard on its own, which needs an element-wise optimizer "
                 "(sgd, adamw, lion); ",
                 optim::optimizer_name(optimizer), "'s trust ratio spans whole parameters");
  }
}

// f16's loss scaling: a step skipped once every gradient is checked (the scaler's own flags are
// checked with the run's; LARS, LAMB and the 1-bit optimizers have the flag read on the host).
void validate_loss_scaling(const OptimizerChoice& o, const train::RunFlags& run, bool cuda_graphs) {
  COURSE_CHECK(o.overflow_drill >= 0, "--overflow-drill must not be negative");
  COURSE_CHECK(o.overflow_drill == 0 || train::loss_scaled(run),
               "--overflow-drill drills f16's loss scaler: add --amp --amp-dtype f16");
  if (!train::loss_scaled(run)) return;
  COURSE_CHECK(!cuda_graphs || optim::updates_elementwise(o.kind),
               "--cuda-graphs replays f16's skip on the device; --optimizer ",
               optim::optimizer_name(o.kind),
               " reads the overflow flag on the host (its trust ratios): run it eagerly");
  COURSE_CHECK(!cuda_graphs || o.overflow_drill == 0,
               "--overflow-drill picks its step on the host, which a replayed graph skips: run "
               "the drill eagerly");
}

// --exp-avg-mask and --exercise-onebit are the 1-bit optimizers', the coefficient flags 1-bit
// LAMB's.
void validate_onebit_extras(const OptimizerChoice& o) {
  const std::string name = optim::optimizer_name(o.kind);
  COURSE_CHECK(!o.exp_avg_mask || optim::is_onebit(o.kind),
               "--exp-avg-mask masks the 1-bit optimizers' compressed momentum; --optimizer ", name,
               " has none");
  COURSE_CHECK(!o.exercise_onebit || optim::is_onebit(o.kind),
               "--exercise-onebit compresses the 1-bit optimizers' momentum with your TP4.22; "
               "--optimizer ",
               name, " compresses nothing");
  const OneBitLambCoefficients& c = o.onebit_lamb;
  COURSE_CHECK(c == OneBitLambCoefficients{} || o.kind == optim::OptimizerKind::kOneBitLamb,
               "--max-coeff, --min-coeff, --coeff-beta, --factor-max, --factor-min and "
               "--factor-threshold are 1-bit LAMB's; --optimizer ",
               name, " has none");
  // Their ranges: the optimizer's own check (onebit_lamb.cc).
}

// The optimizer's own flags, and what the 1-bit optimizers need: plain data parallelism (they
// average their momentum over its ranks in place of the gradients) and no clipping by global
// norm (no rank holds the averaged gradient after the warm-up).
void validate_optimizer(const OptimizerChoice& o, const train::RunFlags& run,
                        const DataParallelChoice& dp, const GridChoice& grid) {
  const char* name = optim::optimizer_name(o.kind);
  COURSE_CHECK(optim::has_betas(o.kind) || !(o.beta1 || o.beta2),
               "--beta1 and --beta2 are the Adam family's (adamw, lamb, lion, onebit-adam, "
               "onebit-lamb); --optimizer ",
               name, " has none");
  COURSE_CHECK(optim::has_eps(o.kind) || !o.eps,
               "--eps is Adam's (adamw, lamb, onebit-adam, onebit-lamb); --optimizer ", name,
               " has none");
  for (const std::optional<float>& beta : {o.beta1, o.beta2}) {
    COURSE_CHECK(!beta || (*beta >= 0 && *beta < 1), "--beta1 and --beta2 must be in [0, 1), got ",
                 beta.value_or(0));
  }
  COURSE_CHECK(!o.eps || *o.eps > 0, "--eps must be positive, got ", o.eps.value_or(0));
  COURSE_CHECK(o.decay_steps >= 0 && o.warmup_steps >= 0,
               "--lr-decay-steps and --warmup-steps must not be negative");
  if (o.in_backward) {
    COURSE_CHECK(!optim::is_onebit(o.kind),
                 "--optimizer-in-backward updates the parameters group by group; --optimizer ",
                 name, " averages its whole momentum at once");
    COURSE_CHECK(!run.clip_grad_norm,
                 "--optimizer-in-backward updates each parameter before the "
                 "others' gradients exist; --clip-grad-norm needs the norm of all of them first");
    COURSE_CHECK(dp.replicated() && !grid.model_parallel(),
                 "--optimizer-in-backward runs under DDP or on one process: leave --sharding "
                 "none and --tensor-parallel, --context-parallel and --pipeline-stages at 1");
  }
  COURSE_CHECK(!o.freeze_step || optim::is_onebit(o.kind),
               "--freeze-step is the 1-bit optimizers' warm-up; --optimizer ", name, " has none");
  if (!optim::is_onebit(o.kind)) return;
  COURSE_CHECK(o.freeze_step.value_or(1) >= 1,
               "--freeze-step must be at least 1: the 1-bit optimizers freeze "
               "the variance their warm-up estimated, got ",
               *o.freeze_step);
  COURSE_CHECK(dp.replicated(), "--optimizer ", name,
               " averages its momentum over the data-parallel ranks in place of DDP's gradients; "
               "it needs --sharding none (DeepSpeed's 1-bit optimizers run at ZeRO stage 0 too)");
  COURSE_CHECK(!grid.model_parallel(), "--optimizer ", name,
               " runs under data parallelism alone: leave --tensor-parallel, "
               "--context-parallel and --pipeline-stages at 1");
  COURSE_CHECK(!run.clip_grad_norm,
               "--clip-grad-norm needs the gradients averaged over the ranks, "
               "which no rank holds once --optimizer ",
               name, " keeps them local after --freeze-step");
}

// --cuda-graphs: the whole step, the same work every step, its collectives captured with it
// (communicator.h). The clip reads each step's norm on the host for its log, the optimizer in
// backward and the 1-bit ones decide on the host as the step runs, and a pipeline times each
// stage's passes on the host (its bubble), which a replay does not run.
void validate_cuda_graphs(const OptimizerChoice& optimizer, const train::RunFlags& run,
                          const GridChoice& grid, const DataParallelChoice& dp) {
  COURSE_CHECK(!run.clip_grad_norm && !optimizer.in_backward && !optim::is_onebit(optimizer.kind),
               "--cuda-graphs replays the same device work every step: it does not take "
               "--clip-grad-norm (its norm is read for the log), --optimizer-in-backward or the "
               "1-bit optimizers (their steps change as they run)");
  COURSE_CHECK(grid.pipeline.stages == 1,
               "--cuda-graphs replays the step without its host code, and a pipeline measures "
               "each stage's passes there (its bubble): leave --pipeline-stages at 1");
  COURSE_CHECK(!dp.cpu_offload,
               "--cuda-graphs replays the device's work; --cpu-offload updates the parameters on "
               "the host's cores between the device's passes (leave one of them out)");
}

// Whether the sample's prompt and sampling are left as they are by default.
bool default_prompt_and_sampling(const SampleChoice& sample) {
  const SampleChoice defaults;
  return sample.prompt == defaults.prompt &&
         sample.sampling.temperature == defaults.sampling.temperature &&
         sample.sampling.top_k == defaults.sampling.top_k &&
         sample.sampling.top_p == defaults.sampling.top_p;
}

// An image model's run on its images: data parallelism, pipeline stages and, for a ViT, tensor
// parallelism; the language models' flags refused.
void validate_image_run(const GptLabOptions& o) {
  const std::string& name = o.model.name;
  COURSE_CHECK(o.grid.context_parallel == 1, "--context-parallel cuts a language model's windows; ",
               name, "'s tokens stay whole");
  validate_image_tensor_parallel(o.grid, o.model);
  validate_pipeline(o.grid.pipeline, name,
                    static_cast<int64_t>(nn::model_pieces({.name = name}).blocks.size()),
                    o.run.accumulate);
  COURSE_CHECK(!o.data_parallel.trainee_zero1, "--sharding ", kExerciseZero1,
               " runs the trainee's ZeRO-1 on the GPT; ", name,
               " takes the library's strategies (zero1, zero2, zero3, shard-grad-op, ...)");
  const TextData text_defaults;
  COURSE_CHECK(o.text.dir == text_defaults.dir && o.model.context == 0 &&
                   o.text.val_fraction == text_defaults.val_fraction &&
                   o.text.synthetic_tokens == text_defaults.synthetic_tokens &&
                   o.sample.tokens == SampleChoice{}.tokens &&
                   default_prompt_and_sampling(o.sample),
               "--text-dir, --synthetic-tokens, --context, --val-fraction, --sample-tokens, "
               "--prompt, --temperature, --top-k and --top-p feed the language models; ",
               name, " is an image model and trains on --data-dir's images");
  if (o.estimate.figures_only()) {
    COURSE_CHECK(o.images == ImageData{}, "--estimate-only and --throughput-gpus take ", name,
                 " at its preset's own size; --data-dir, --image-size and --test-subset are for "
                 "training");
    return;
  }
  const int64_t smallest = nn::min_image_size(name);
  COURSE_CHECK(o.images.size >= smallest, "--image-size ", o.images.size, " is too small for ",
               name, " (at least ", smallest, ")");
}

// A language model's run on the text (or on random tokens): its window, its sample, and the grid
// against its shape.
void validate_language_run(const GptLabOptions& o) {
  const std::string& name = o.model.name;
  COURSE_CHECK(o.images == ImageData{},
               "--data-dir, --image-size and --test-subset feed the image models (vit-..., "
               "coatnet-...); ",
               name, " reads --text-dir");
  const nn::GptConfig& config = *o.model.language;
  COURSE_CHECK(o.model.context >= 0 && o.model.context <= config.context, "--context ",
               o.model.context, " must be between 1 and ", name, "'s context of ", config.context);
  COURSE_CHECK(o.text.val_fraction > 0 && o.text.val_fraction < 1,
               "--val-fraction must be in (0, 1), got ", o.text.val_fraction);
  nn::check_sampling(o.sample.sampling);
  COURSE_CHECK(!o.sample.prompt.empty(), "--prompt must not be empty");
  const int64_t window = o.model.window();
  COURSE_CHECK(static_cast<int64_t>(o.sample.prompt.size()) <= window, "--prompt holds ",
               o.sample.prompt.size(), " byte tokens, more than ", name, "'s window of ", window,
               ": the sample would start from its last ", window,
               " only (the generation engine refuses it too)");
  validate_pipeline(o.grid.pipeline, name, config.layers, o.run.accumulate);
  validate_tensor_parallel(o.grid, o.model);
  validate_context_parallel(o.grid.context_parallel, o.model);
  COURSE_CHECK(o.text.synthetic_tokens >= 0, "--synthetic-tokens must not be negative, got ",
               o.text.synthetic_tokens);
  COURSE_CHECK(o.text.synthetic_tokens == 0 ||
                   (o.text.dir == TextData{}.dir &&
                    (o.sample.tokens == 0 || o.sample.tokens == SampleChoice{}.tokens) &&
                    default_prompt_and_sampling(o.sample)),
               "--synthetic-tokens trains on random tokens: no text is read (--text-dir) and "
               "nothing is sampled (--sample-tokens, --prompt, --temperature, --top-k, --top-p)");
  if (o.estimate.figures_only()) return;  // any preset: nothing is trained
  COURSE_CHECK(o.text.synthetic_tokens > 0 || config.vocabulary == kByteVocabulary, name,
               " has a vocabulary of ", config.vocabulary,
               " tokens; the lab's byte-level text needs ", kByteVocabulary,
               " (gpt-tiny; --synthetic-tokens N times any preset on random tokens)");
}

}  // namespace

void validate(const GptLabOptions& o) {
  train::validate_run_flags(o.run);
  COURSE_CHECK(o.steps_per_epoch >= 0 && o.sample.tokens >= 0 && o.train_batch_size >= 0,
               "--steps-per-epoch, --sample-tokens and --train-batch-size must not be negative");
  COURSE_CHECK(o.comm_timeout > 0, "--comm-timeout must be positive, got ", o.comm_timeout);
  COURSE_CHECK(o.estimate.throughput_gpus >= 0, "--throughput-gpus must not be negative");
  if (!o.estimate.throughput_megatron.empty()) {
    COURSE_CHECK(o.run.model == GptLabOptions{}.run.model && o.estimate.throughput_gpus == 0 &&
                     !o.estimate.estimate_only,
                 "--throughput-megatron prints the rows of Megatron-LM's table with their own "
                 "models and grids: it takes no --model, --throughput-gpus or --estimate-only");
    if (o.estimate.throughput_megatron != "all") {
      parallel::megatron_row(o.estimate.throughput_megatron);  // throws naming the rows
    }
  }
  COURSE_CHECK(o.estimate.max_memory_mb >= 0 && o.estimate.estimate_ranks >= 0 &&
                   o.data_parallel.shard_group_size >= 0,
               "--max-memory-mb, --estimate-ranks and --shard-group-size must not be negative");
  validate_optimizer(o.optimizer, o.run, o.data_parallel, o.grid);
  validate_onebit_extras(o.optimizer);
  validate_loss_scaling(o.optimizer, o.run, o.cuda_graphs);
  validate_data_parallel(o.data_parallel, o.run, o.optimizer.kind);
  if (o.cuda_graphs) validate_cuda_graphs(o.optimizer, o.run, o.grid, o.data_parallel);
  validate_grid(o.grid, o.data_parallel, o.estimate);
  COURSE_CHECK(o.grid.tensor_parallel == 1 || !o.model.checkpoint_activations,
               "--tensor-parallel cuts the blocks' layers; it does not combine with "
               "--checkpoint-activations");
  if (o.model.images()) {
    validate_image_run(o);
  } else {
    validate_language_run(o);
  }
}

void validate_on_every_rank(GptLabOptions& o, int ranks) {
  course::check_alike_on_every_rank([&] {
    complete_train_batch(o, o.estimate.estimate_ranks > 0 ? o.estimate.estimate_ranks : ranks);
    validate(o);
  });
}

void validate_run_ranks(const DataParallelChoice& dp, int ranks) {
  const bool offload_alone = dp.cpu_offload && (dp.library == parallel::Sharding::kZero1 ||
                                                dp.library == parallel::Sharding::kZero2);
  COURSE_CHECK(dp.replicated() || ranks > 1 || offload_alone, "--sharding ", dp.flag(),
               " shards over the data-parallel ranks and needs at least 2; this run has 1 "
               "(start it with mpirun -np N, or srun; on one rank, --sharding zero1 or zero2 "
               "with --cpu-offload is ZeRO-Offload)");
}

void validate_grid_ranks(const GridChoice& grid, int ranks, bool estimate_ranks) {
  const int64_t per_replica = grid.ranks_per_replica();
  COURSE_CHECK(ranks > 0 && ranks % per_replica == 0, ranks, " ranks",
               estimate_ranks ? " (--estimate-ranks)" : "", " do not cut into --context-parallel ",
               grid.context_parallel, " x --tensor-parallel ", grid.tensor_parallel,
               " x --pipeline-stages ", grid.pipeline.stages, " = ", per_replica,
               " ranks per replica");
}

void complete_train_batch(GptLabOptions& o, int ranks) {
  if (!o.batch_given.train) return;
  const int64_t per_replica = o.grid.ranks_per_replica();
  if (ranks % per_replica != 0) return;  // validate_grid_ranks says why
  const bool pipelined = o.grid.pipeline.stages > 1;
  const train::BatchSizes given{
      .train = o.train_batch_size,
      .micro = o.batch_given.micro ? o.run.batch_size : 0,
      .accumulation = pipelined ? o.grid.pipeline.micro_batches
                                : (o.batch_given.accumulation ? o.run.accumulate : 0)};
  const train::BatchSizes sizes = train::complete_batch_sizes(given, ranks / per_replica);
  o.run.batch_size = sizes.micro;
  if (!pipelined) o.run.accumulate = sizes.accumulation;
  if (!o.config || o.config->file.empty()) return;
  const std::string how = detail::concat("derived as DeepSpeed does: train_batch_size ",
                                         sizes.train, " = ", sizes.micro, " x ", sizes.accumulation,
                                         " x ", ranks / per_replica, " data-parallel rank(s)");
  if (!given.micro) {
    o.config->from_file.push_back({.value = std::to_string(sizes.micro),
                                   .key = "train_micro_batch_size_per_gpu",
                                   .note = how});
  }
  if (!given.accumulation) {
    o.config->from_file.push_back({.value = std::to_string(sizes.accumulation),
                                   .key = "gradient_accumulation_steps",
                                   .note = how});
  }
}

}  // namespace day4
