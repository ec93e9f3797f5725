// Command line of the GPT lab.
#include "day4_large_models/gpt_options.h"

#include <string>
#include <vector>

#include "common/nn/gpt.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/sharding.h"
#include "common/train/training_loop.h"

namespace day4 {

using namespace course;

namespace {

// A flag whose names map to a type's values, parsed into `target` once; the help lists the
// names and the default's.
template <class T>
void add_choice(CLI::App& app, const std::string& flag, T& target,
                const std::vector<std::pair<std::string, T>>& choices, const std::string& help) {
  std::vector<std::string> names;
  std::string shown_default;
  for (const auto& [name, value] : choices) {
    names.push_back(name);
    if (value == target) shown_default = name;
  }
  app.add_option_function<std::string>(
         flag,
         [&target, choices](const std::string& chosen) {
           for (const auto& [name, value] : choices) {
             if (name == chosen) target = value;
           }
         },
         help)
      ->check(CLI::IsMember(names))
      ->default_str(shown_default);
}

}  // namespace

std::string sharding_flag(const GptLabOptions& o) {
  return o.exercise_zero1 ? kExerciseZero1 : parallel::data_parallel_mode_name(o.sharding);
}

GptLabOptions::GptLabOptions() {
  model = "gpt-tiny";
  batch_size = 16;
  lr = 2e-3f;
  wd = 0.1f;
  label_smoothing = 0.0f;
}

GptLabOptions parse_gpt_options(int argc, char** argv) {
  GptLabOptions o;
  CLI::App app(
      "Day 4: train a GPT on the embedded text (Debian's fortunes, byte-level tokens), print "
      "its validation loss against the unigram entropy and a generated sample");
  std::vector<std::string> presets;
  for (const nn::GptConfig& c : nn::gpt_presets()) presets.push_back(c.name);
  train::add_run_flags(app, o, presets);
  app.add_option("--text-dir", o.text_dir, "folder of fortune-format text files")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of weights, windows and sampling")->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "optimizer")
      ->check(CLI::IsMember(optim::optimizer_names()))
      ->capture_default_str();
  app.add_option("--context", o.context, "tokens per training window (0: the model's context)")
      ->capture_default_str();
  app.add_option("--val-fraction", o.val_fraction, "share of documents held out")
      ->capture_default_str();
  app.add_option("--steps-per-epoch", o.steps_per_epoch,
                 "steps in an epoch (0: every training window once)")
      ->capture_default_str();
  app.add_option("--warmup-steps", o.warmup_steps, "linear warm-up steps")->capture_default_str();
  app.add_flag("--checkpoint-activations", o.checkpoint_activations,
               "recompute each block's activations in backward instead of keeping them");
  app.add_option("--accumulate", o.accumulate,
                 "micro-batches of --batch-size per optimizer step (gradient accumulation)")
      ->capture_default_str();
  app.add_option("--max-memory-mb", o.max_memory_mb,
                 "refuse a run whose estimated peak per rank is above this, and cap the "
                 "allocator there (0: no cap)")
      ->capture_default_str();
  app.add_flag("--estimate-only", o.estimate_only,
               "print the per-rank memory estimate of the run and exit (any --model preset)");
  app.add_option("--throughput-gpus", o.throughput_gpus,
                 "print the throughput model (step time, memory, MFU) of every dp x tp x pp grid "
                 "of this many GPUs for --model and --batch-size sequences per step, and exit")
      ->capture_default_str();
  app.add_option("--estimate-ranks", o.estimate_ranks,
                 "ranks the estimate is for (0: the ranks of this run)")
      ->capture_default_str();
  std::vector<std::string> shardings = {"none"};
  for (const std::string& name : parallel::sharding_names()) shardings.push_back(name);
  shardings.push_back(kExerciseZero1);
  app.add_option_function<std::string>(
         "--sharding",
         [&o](const std::string& name) {
           o.exercise_zero1 = name == kExerciseZero1;
           o.sharding = o.exercise_zero1 ? std::nullopt : parallel::parse_data_parallel_mode(name);
         },
         "on several ranks: none (DDP), zero1 (optimizer states sharded), zero2 (and "
         "gradients), zero3 (and parameters: FSDP's full shard), shard-grad-op, exercise-zero1 "
         "(ZeRO-1 from your TP4.1-TP4.3)")
      ->check(CLI::IsMember(shardings))
      ->default_str("none");
  add_choice(app, "--backward-prefetch", o.backward_prefetch,
             {{"pre", parallel::BackwardPrefetch::kPre},
              {"post", parallel::BackwardPrefetch::kPost},
              {"none", parallel::BackwardPrefetch::kNone}},
             "when the previous block's all-gather starts in backward: pre (before this "
             "block's gradients), post (after), none");
  app.add_option("--shard-group-size", o.shard_group_size,
                 "hybrid-shard: ranks one copy of the model is cut over (0: the ranks of a "
                 "node); the copies are replicated across the groups")
      ->capture_default_str();
  app.add_flag("--cpu-offload", o.cpu_offload,
               "sharded modes: keep the shards and the optimizer's step in host memory");
  add_choice(app, "--param-dtype", o.param_dtype,
             {{"f32", DType::kF32}, {"bf16", DType::kBF16}, {"f16", DType::kF16}},
             "sharded modes: the dtype of the gathered parameters the layers compute from "
             "(bf16: FSDP's mixed precision, with --amp --amp-dtype bf16; f16 is refused; "
             "master shards, gradients and reductions stay f32)");
  app.add_flag("--forward-prefetch", o.forward_prefetch,
               "start the next block's all-gather before this block's forward");
  app.add_option("--tensor-parallel", o.tensor_parallel,
                 "tensor parallelism: every layer cut over this many ranks (heads, feed-forward "
                 "width and vocabulary split); more ranks form data-parallel replicas or "
                 "pipeline stages (world = dp x tensor-parallel x stages)")
      ->capture_default_str();
  app.add_flag("--sequence-parallel", o.sequence_parallel,
               "with --tensor-parallel: the residual stream and LayerNorms between the "
               "tensor-parallel layers cut over its ranks along the sequence (all-gather and "
               "reduce-scatter instead of all-reduce)");
  app.add_option("--pipeline-stages", o.pipeline_stages,
                 "pipeline parallelism: the model's blocks cut into this many stages, one per "
                 "rank; more ranks form data-parallel pipelines (world = dp x stages)")
      ->capture_default_str();
  app.add_option("--micro-batches", o.micro_batches,
                 "pipeline: micro-batches of --batch-size windows per pipeline and step")
      ->capture_default_str();
  add_choice(app, "--schedule", o.schedule,
             {{"naive", parallel::PipelineSchedule::kNaive},
              {"gpipe", parallel::PipelineSchedule::kGpipe},
              {"1f1b", parallel::PipelineSchedule::kOneForwardOneBackward},
              {"interleaved", parallel::PipelineSchedule::kInterleaved}},
             "pipeline schedule: naive (one micro-batch at a time), gpipe (all forwards, then "
             "all backwards), 1f1b (one forward one backward), interleaved (1F1B over "
             "--virtual-stages chunks per rank)");
  app.add_option("--virtual-stages", o.virtual_stages,
                 "interleaved schedule: model chunks per rank (the model is cut into stages x "
                 "this; micro-batches must be a multiple of the stages)")
      ->capture_default_str();
  app.add_option("--timeline", o.timeline,
                 "pipeline: write the last step's forwards and backwards of every stage to this "
                 "PNG (the schedule diagram, measured)");
  add_choice(app, "--pipeline-balance", o.pipeline_balance,
             {{"layers", parallel::StageBalance::kLayers},
              {"parameters", parallel::StageBalance::kParameters}},
             "pipeline: cut the blocks evenly by layers, or by parameters (the embedding and "
             "output layer counted)");
  app.add_option("--comm-timeout", o.comm_timeout,
                 "seconds a rank waits for the others before failing")
      ->capture_default_str();
  app.add_option("--sample-tokens", o.sample_tokens, "tokens generated after training")
      ->capture_default_str();
  app.add_option("--prompt", o.prompt, "text the sample starts from");
  app.add_option("--temperature", o.temperature, "sampling temperature")->capture_default_str();
  train::parse_or_exit(app, argc, argv);
  return o;
}

void validate(const GptLabOptions& o) {
  train::validate_run_flags(o);
  const nn::GptConfig config = nn::gpt_preset(o.model);
  COURSE_CHECK(o.context >= 0 && o.context <= config.context, "--context ", o.context,
               " must be between 1 and ", o.model, "'s context of ", config.context);
  COURSE_CHECK(o.val_fraction > 0 && o.val_fraction < 1, "--val-fraction must be in (0, 1), got ",
               o.val_fraction);
  COURSE_CHECK(o.steps_per_epoch >= 0 && o.warmup_steps >= 0 && o.sample_tokens >= 0,
               "--steps-per-epoch, --warmup-steps and --sample-tokens must not be negative");
  COURSE_CHECK(o.temperature > 0, "--temperature must be positive, got ", o.temperature);
  COURSE_CHECK(!o.prompt.empty(), "--prompt must not be empty");
  COURSE_CHECK(o.accumulate >= 1, "--accumulate must be at least 1, got ", o.accumulate);
  COURSE_CHECK(o.max_memory_mb >= 0 && o.estimate_ranks >= 0 && o.shard_group_size >= 0,
               "--max-memory-mb, --estimate-ranks and --shard-group-size must not be negative");
  COURSE_CHECK(o.comm_timeout > 0, "--comm-timeout must be positive, got ", o.comm_timeout);
  COURSE_CHECK(!o.cpu_offload || o.sharding.has_value(),
               "--cpu-offload moves the shards of a sharded mode to host memory; choose "
               "--sharding zero1, zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
  COURSE_CHECK(!(o.amp && o.amp_dtype == DType::kF16) && o.param_dtype != DType::kF16,
               "day 4 computes in f32 or bf16 (--amp --amp-dtype bf16, --param-dtype bf16): f16 "
               "needs a loss scaler (day 1's TP1.2), without which the gradients underflow to "
               "zero");
  if (o.param_dtype != DType::kF32) {
    const std::string_view name = dtype_name(o.param_dtype);
    COURSE_CHECK(o.sharding.has_value(), "--param-dtype ", name,
                 " gathers 16-bit copies of a sharded mode's f32 shards; choose --sharding zero1, "
                 "zero2, zero3, shard-grad-op, hybrid-shard or no-shard");
    COURSE_CHECK(o.amp && o.amp_dtype == o.param_dtype, "--param-dtype ", name, " computes in ",
                 name, ": add --amp --amp-dtype ", name);
  }
  if (o.sharding.has_value() || o.exercise_zero1) {
    COURSE_CHECK(o.optimizer == "adamw" || o.optimizer == "sgd", "--sharding ", sharding_flag(o),
                 " updates each rank's shard on its own, which needs an element-wise optimizer "
                 "(adamw, sgd); ",
                 o.optimizer, "'s trust ratio spans whole parameters");
  }
  COURSE_CHECK(o.pipeline_stages >= 1 && o.micro_batches >= 1 && o.virtual_stages >= 1,
               "--pipeline-stages, --micro-batches and --virtual-stages must be at least 1");
  COURSE_CHECK((o.schedule == parallel::PipelineSchedule::kInterleaved) == (o.virtual_stages > 1),
               "--schedule interleaved runs 2 or more --virtual-stages per rank; the other "
               "schedules one (got --schedule ",
               parallel::pipeline_schedule_name(o.schedule), " --virtual-stages ", o.virtual_stages,
               ")");
  COURSE_CHECK(o.timeline.empty() || o.pipeline_stages > 1,
               "--timeline draws the stages of a pipeline: add --pipeline-stages 2 or more");
  if (!o.timeline.empty()) train::check_output_path("--timeline", o.timeline);
  COURSE_CHECK(o.tensor_parallel >= 1, "--tensor-parallel must be at least 1");
  const bool model_parallel = o.pipeline_stages > 1 || o.tensor_parallel > 1;
  if (model_parallel) {
    COURSE_CHECK(!o.sharding && !o.exercise_zero1 && o.param_dtype == DType::kF32,
                 "--tensor-parallel and --pipeline-stages average the replicas' gradients over "
                 "the data-parallel ranks; they do not combine with --sharding ",
                 sharding_flag(o), " or --param-dtype ", dtype_name(o.param_dtype));
    COURSE_CHECK(!o.estimate_only && o.max_memory_mb == 0,
                 "the memory estimate covers data parallelism; for --tensor-parallel and "
                 "--pipeline-stages see --throughput-gpus (bench/pipeline_bench measures "
                 "pipelines)");
  }
  if (o.pipeline_stages > 1) {
    COURSE_CHECK(o.accumulate == 1,
                 "--pipeline-stages accumulates over its --micro-batches; "
                 "leave --accumulate at 1");
    COURSE_CHECK(o.pipeline_stages * o.virtual_stages <= config.layers, "--pipeline-stages ",
                 o.pipeline_stages, " x --virtual-stages ", o.virtual_stages, " cuts ", o.model,
                 "'s ", config.layers, " blocks into stages of none");
  }
  if (o.tensor_parallel > 1) {
    const int64_t t = o.tensor_parallel;
    COURSE_CHECK(config.heads % t == 0 && config.vocabulary % t == 0, "--tensor-parallel ", t,
                 " does not split ", o.model, "'s ", config.heads, " heads and ", config.vocabulary,
                 "-token vocabulary evenly over the ranks");
    COURSE_CHECK(!o.checkpoint_activations,
                 "--tensor-parallel cuts the blocks' layers; it does not combine with "
                 "--checkpoint-activations");
  }
  if (o.sequence_parallel) {
    const int64_t context = o.context > 0 ? o.context : config.context;
    COURSE_CHECK(o.tensor_parallel > 1 && o.pipeline_stages == 1,
                 "--sequence-parallel cuts the activations between tensor-parallel layers: add "
                 "--tensor-parallel 2 or more, without --pipeline-stages");
    COURSE_CHECK(context % o.tensor_parallel == 0, "--sequence-parallel cuts windows of ", context,
                 " tokens over --tensor-parallel ", o.tensor_parallel,
                 " ranks: choose a --context they divide");
  }
  COURSE_CHECK(o.throughput_gpus >= 0, "--throughput-gpus must not be negative");
  if (o.estimate_only || o.throughput_gpus > 0) return;  // any preset: nothing is trained
  COURSE_CHECK(config.vocabulary == kByteVocabulary, o.model, " has a vocabulary of ",
               config.vocabulary, " tokens; the lab's byte-level text needs ", kByteVocabulary,
               " (gpt-tiny)");
}

}  // namespace day4
