// Command line of the GPT lab.
#include "day4_large_models/gpt_options.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/models/model_registry.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/train/training_loop.h"

namespace day4 {

using namespace course;

namespace {

// The text or images, the model's windows, the step and the run's seed.
void add_data_flags(CLI::App& app, GptLabOptions& o) {
  app.add_option("--text-dir", o.text.dir, "folder of fortune-format text files")
      ->capture_default_str();
  app.add_option("--data-dir", o.images.dir,
                 "image models: dataset folder (Fashion-MNIST, CIFAR-10, train.pack + val.pack, "
                 "or train/ + val/), as days 1-3 read it")
      ->capture_default_str();
  app.add_option("--image-size", o.images.size, "image models: side the images are resized to")
      ->capture_default_str();
  app.add_option("--test-subset", o.images.test_subset,
                 "image models: test on the first N test images only (in-memory data: quick "
                 "runs)");
  app.add_option("--seed", o.seed, "seed of weights, windows and sampling")->capture_default_str();
  app.add_flag("--cuda-graphs", o.cuda_graphs,
               "one process: capture forward, backward and update once as a CUDA graph, then "
               "replay it every step (torch.compile's reduce-overhead; on the CPU a recorded "
               "task graph stands in)");
  app.add_option("--train-batch-size", o.train_batch_size,
                 "a step's windows or images over every replica (--batch-size x micro-batches "
                 "x data-parallel ranks), as DeepSpeed's train_batch_size: checked, or, without "
                 "--batch-size or --accumulate, the missing one derived (0: no check)")
      ->capture_default_str();
  app.add_option("--context", o.model.context,
                 "tokens per training window (0: the model's context)")
      ->capture_default_str();
  app.add_option("--val-fraction", o.text.val_fraction, "share of documents held out")
      ->capture_default_str();
  app.add_option("--synthetic-tokens", o.text.synthetic_tokens,
                 "train on N uniformly random tokens over the model's vocabulary in place of the "
                 "text: a throughput run of any preset (gpt2's 50,257 tokens too), as llm.c and "
                 "PyTorch's benchmarks time one; nothing is learnt and nothing sampled");
  app.add_option("--steps-per-epoch", o.steps_per_epoch,
                 "steps in an epoch (0: every training window once)")
      ->capture_default_str();
  app.add_flag("--checkpoint-activations", o.model.checkpoint_activations,
               "recompute each block's activations in backward instead of keeping them");
  course::train::add_step_flags(app, o.run);
}

// 1-bit LAMB's coefficient clamps and factor, under DeepSpeed's names.
void add_onebit_lamb_flags(CLI::App& app, course::OneBitLambCoefficients& c) {
  const char* lamb = "1-bit LAMB: ";
  app.add_option("--max-coeff", c.max_coeff, std::string(lamb) + "largest warm-up coefficient")
      ->capture_default_str();
  app.add_option("--min-coeff", c.min_coeff, std::string(lamb) + "smallest warm-up coefficient")
      ->capture_default_str();
  app.add_option("--coeff-beta", c.coeff_beta,
                 std::string(lamb) +
                     "decay of the warm-up coefficients' average, frozen at the "
                     "freeze")
      ->capture_default_str();
  app.add_option("--factor-max", c.factor_max,
                 std::string(lamb) + "largest factor of the frozen coefficient")
      ->capture_default_str();
  app.add_option("--factor-min", c.factor_min,
                 std::string(lamb) + "smallest factor of the frozen coefficient")
      ->capture_default_str();
  app.add_option("--factor-threshold", c.factor_threshold,
                 std::string(lamb) + "how far the factor may move in a step, as a fraction")
      ->capture_default_str();
}

// The optimizer, its options and its learning-rate schedule.
void add_optimizer_flags(CLI::App& app, OptimizerChoice& o) {
  train::add_choice(app, "--optimizer", o.kind, optim::optimizer_choices(true),
                    "optimizer (onebit-adam, onebit-lamb: 1-bit Adam and LAMB, the momentum "
                    "averaged over the data-parallel ranks as signs after --freeze-step steps)");
  app.add_option("--beta1", o.beta1, "the first moment's decay (AdamW, LAMB, Lion, 1-bit)");
  app.add_option("--beta2", o.beta2, "the second moment's decay (AdamW, LAMB, Lion, 1-bit)");
  app.add_option("--eps", o.eps, "Adam's epsilon (AdamW, LAMB, 1-bit)");
  app.add_option("--freeze-step", o.freeze_step,
                 "1-bit optimizers: steps of plain AdamW / LAMB before the variance freezes and "
                 "the momentum travels compressed (default 100)");
  app.add_flag("--exp-avg-mask", o.exp_avg_mask,
               "1-bit optimizers: DeepSpeed's exp_avg_mask, made at the freeze: the elements whose "
               "warm-up variance is exactly 0 (never given a gradient) receive no momentum");
  app.add_flag("--exercise-onebit", o.exercise_onebit,
               "1-bit optimizers: the workers compress with your onebit_compress (TP4.22) in place "
               "of the library's kernel (on the CPU)");
  add_onebit_lamb_flags(app, o.onebit_lamb);
  app.add_option("--overflow-drill", o.overflow_drill,
                 "--amp-dtype f16: at this step (from 1) an inf lands in the last rank's "
                 "gradients alone, as an overflow there would: every rank must skip the step");
  app.add_flag("--optimizer-in-backward", o.in_backward,
               "update each parameter (one process) or DDP bucket as soon as its gradient is "
               "final, during the backward pass, and free the gradient: the step keeps no full "
               "set of gradients (DeepSpeed's backward fusion)");
  train::add_choice(app, "--lr-schedule", o.schedule, optim::schedule_choices(),
                    "after the warm-up: cosine (down to lr / 10), constant, linear (down to 0), "
                    "one-cycle");
  app.add_option("--lr-decay-steps", o.decay_steps,
                 "steps the schedule decays over (0: the run's steps)")
      ->capture_default_str();
  app.add_option("--warmup-steps", o.warmup_steps,
                 "warm-up steps (at most the schedule's: a longer one is cut to it)")
      ->capture_default_str();
  train::add_choice(app, "--warmup-type", o.warmup_shape,
                    {{"linear", optim::WarmupShape::kLinear}, {"log", optim::WarmupShape::kLog}},
                    "how the rate rises over the warm-up: linear, or log (DeepSpeed's WarmupLR "
                    "default)");
}

// The memory estimate, its budget and the throughput model.
void add_estimate_flags(CLI::App& app, EstimateChoice& o) {
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
  app.add_option("--throughput-megatron", o.throughput_megatron,
                 "print the throughput model's prediction for a row of Megatron-LM's published "
                 "table (1.7b, 18b, 145b, 1t, or all) beside the row's figure, and exit");
  app.add_option("--estimate-ranks", o.estimate_ranks,
                 "ranks the estimate is for (0: the ranks of this run)")
      ->capture_default_str();
}

// DeepSpeed's zero_optimization settings, as flags.
void add_zero_communication_flags(CLI::App& app, parallel::ZeroCommunication& o) {
  app.add_option("--reduce-bucket-size", o.reduce_bucket_elements,
                 "gradient elements the blocks' reductions wait for before they launch together "
                 "(DeepSpeed's reduce_bucket_size; --sharding none: DDP's bucket; 0: each "
                 "block's as soon as its backward ends)")
      ->capture_default_str();
  app.add_option("--allgather-bucket-size", o.allgather_bucket_elements,
                 "zero1, zero2: elements gathered at most at a time after the step "
                 "(DeepSpeed's allgather_bucket_size; 0: every block's at once)")
      ->capture_default_str();
  train::add_switch(app, "overlap-comm", o.overlap,
                    "sharded modes: reductions run on while backward goes on (DeepSpeed's "
                    "overlap_comm; off: backward waits for each bucket)");
  train::add_switch(app, "reduce-scatter", o.reduce_scatter,
                    "sharded modes: reduce-scatter the gradients (off: all-reduce them, each rank "
                    "keeping its shard, as DeepSpeed's reduce_scatter false)");
  app.add_option("--prefetch-bucket-size", o.prefetch_bucket_elements,
                 "zero3, shard-grad-op, hybrid-shard: DeepSpeed's stage-3 prefetch in place of "
                 "--forward-prefetch and --backward-prefetch: the blocks ahead in the pass "
                 "gathered while fewer than this many elements are being prefetched "
                 "(stage3_prefetch_bucket_size; 0: none)");
  app.add_option("--max-live-parameters", o.max_live_elements,
                 "with --prefetch-bucket-size: no prefetch past this many gathered elements "
                 "(stage3_max_live_parameters)")
      ->capture_default_str();
  app.add_option("--param-persistence-threshold", o.persistence_threshold,
                 "zero3, shard-grad-op, hybrid-shard: parameter tensors of at most this many "
                 "elements stay gathered, their shards all-gathered after each step "
                 "(stage3_param_persistence_threshold; 0: none)")
      ->capture_default_str();
}

// Data parallelism: DDP, or a sharding strategy and its options.
void add_data_parallel_flags(CLI::App& app, DataParallelChoice& o) {
  std::vector<std::string> shardings = {"none"};
  for (const std::string& name : parallel::sharding_names()) shardings.push_back(name);
  shardings.push_back(kExerciseZero1);
  app.add_option_function<std::string>(
         "--sharding",
         [&o](const std::string& name) {
           const bool trainee = name == kExerciseZero1;
           o.library = trainee ? std::nullopt : parallel::parse_data_parallel_mode(name);
           o.trainee_zero1 = trainee;
         },
         "on several ranks: none (DDP), zero1 (optimizer states sharded), zero2 (and "
         "gradients), zero3 (and parameters: FSDP's full shard), shard-grad-op, exercise-zero1 "
         "(ZeRO-1 from your TP4.1-TP4.3)")
      ->check(CLI::IsMember(shardings))
      ->default_str("none");
  train::add_choice(app, "--backward-prefetch", o.backward_prefetch,
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
  train::add_choice(app, "--param-dtype", o.param_dtype,
                    {{"f32", DType::kF32}, {"bf16", DType::kBF16}, {"f16", DType::kF16}},
                    "sharded modes: the dtype of the gathered parameters the layers compute from "
                    "(bf16 or f16: FSDP's mixed precision, with --amp --amp-dtype of the same; "
                    "master shards, gradients and reductions stay f32)");
  app.add_flag("--forward-prefetch", o.forward_prefetch,
               "start the next block's all-gather before this block's forward");
  add_zero_communication_flags(app, o.communication);
}

// Model parallelism: the tp and pp axes of the grid, and the pipeline's schedule.
void add_model_parallel_flags(CLI::App& app, GridChoice& o) {
  app.add_option("--tensor-parallel", o.tensor_parallel,
                 "tensor parallelism: every layer cut over this many ranks (heads, feed-forward "
                 "width and vocabulary split); more ranks form data-parallel replicas or "
                 "pipeline stages (world = dp x tensor-parallel x stages)")
      ->capture_default_str();
  app.add_flag("--sequence-parallel", o.sequence_parallel,
               "with --tensor-parallel: the residual stream and LayerNorms between the "
               "tensor-parallel layers cut over its ranks along the sequence (all-gather and "
               "reduce-scatter instead of all-reduce)");
  app.add_option("--context-parallel", o.context_parallel,
                 "context parallelism: each window's positions cut over this many ranks (2 "
                 "chunks each, an early and a late one), attention a ring of key/value blocks "
                 "around them; more ranks form data-parallel replicas (world = dp x "
                 "context-parallel x tensor-parallel x stages)")
      ->capture_default_str();
  app.add_option("--pipeline-stages", o.pipeline.stages,
                 "pipeline parallelism: the model's blocks cut into this many stages, one per "
                 "rank; more ranks form data-parallel pipelines (world = dp x stages)")
      ->capture_default_str();
  app.add_option("--micro-batches", o.pipeline.micro_batches,
                 "pipeline: micro-batches of --batch-size windows per pipeline and step")
      ->capture_default_str();
  train::add_choice(
      app, "--schedule", o.pipeline.schedule,
      {{"naive", parallel::PipelineSchedule::kNaive},
       {"gpipe", parallel::PipelineSchedule::kGpipe},
       {"1f1b", parallel::PipelineSchedule::kOneForwardOneBackward},
       {"zb-h1", parallel::PipelineSchedule::kZeroBubbleH1},
       {"interleaved", parallel::PipelineSchedule::kInterleaved}},
      "pipeline schedule: naive (one micro-batch at a time), gpipe (all forwards, then "
      "all backwards), 1f1b (one forward one backward), zb-h1 (1F1B with the weight "
      "gradients split off into passes that fill the cool-down), interleaved (1F1B over "
      "--virtual-stages chunks per rank)");
  app.add_option("--virtual-stages", o.pipeline.virtual_stages,
                 "interleaved schedule: model chunks per rank (the model is cut into stages x "
                 "this; micro-batches must be a multiple of the stages)")
      ->capture_default_str();
  app.add_option("--timeline", o.pipeline.timeline,
                 "pipeline: write the last step's forwards and backwards of every stage to this "
                 "PNG (the schedule diagram, measured)");
  train::add_choice(
      app, "--pipeline-balance", o.pipeline.balance,
      {{"layers", parallel::StageBalance::kLayers},
       {"parameters", parallel::StageBalance::kParameters},
       {"compute", parallel::StageBalance::kCompute}},
      "pipeline: cut the blocks evenly by layers, by parameters (the embedding and output "
      "layer or stem and head counted), or by the forward's multiply-adds");
  app.add_flag("--pipeline-exercises", o.pipeline.exercises,
               "pipeline: your exercises cut it (TP4.6, by multiply-adds), order each stage's "
               "actions (TP4.7: --schedule gpipe or 1f1b) and exchange each round's messages "
               "(TP4.8)");
}

// --model's family and, for a language model, its preset.
void resolve_model(const std::string& name, LabModel& model) {
  model.name = name;
  model.family = &nn::model_family(name);
  model.language = model.family->traits.images ? std::nullopt : std::optional(nn::gpt_preset(name));
}

}  // namespace

parallel::DataParallelOptions DataParallelChoice::library_options() const {
  parallel::DataParallelOptions options{.sharding = library,
                                        .backward_prefetch = backward_prefetch,
                                        .forward_prefetch = forward_prefetch,
                                        .shard_group_size = shard_group_size,
                                        .cpu_offload = cpu_offload,
                                        .param_dtype = param_dtype,
                                        .communication = communication};
  // DeepSpeed without ZeRO all-reduces in buckets of reduce_bucket_size f32 elements.
  if (!library && communication.reduce_bucket_elements > 0) {
    options.bucket_bytes = options.first_bucket_bytes = communication.reduce_bucket_elements * 4;
  }
  return options;
}

std::string DataParallelChoice::flag() const {
  return trainee_zero1 ? kExerciseZero1 : parallel::data_parallel_mode_name(library);
}

GptLabOptions::GptLabOptions() {
  run.model = "gpt-tiny";
  run.batch_size = 16;
  run.lr = 2e-3f;
  run.wd = 0.1f;
  run.label_smoothing = 0.0f;
  resolve_model(run.model, model);
}

GptLabOptions parse_gpt_options(int argc, char** argv) {
  GptLabOptions o;
  CLI::App app(
      "Day 4: train a GPT on the embedded text (Debian's fortunes, byte-level tokens), print "
      "its validation loss against the unigram entropy and a generated sample; or, with "
      "--model vit-... or coatnet-..., an image model on the embedded Fashion-MNIST");
  std::vector<std::string> presets;  // the language models, and the image models in pieces
  for (const nn::ModelFamilySpec* family : nn::model_families()) {
    if (family->traits.images && !family->traits.in_pieces) continue;
    for (std::string& name : family->names()) presets.push_back(std::move(name));
  }
  train::add_run_flags(app, o.run, presets);
  add_data_flags(app, o);
  add_optimizer_flags(app, o.optimizer);
  add_estimate_flags(app, o.estimate);
  add_data_parallel_flags(app, o.data_parallel);
  add_model_parallel_flags(app, o.grid);
  app.add_option("--comm-timeout", o.comm_timeout,
                 "seconds a rank waits for the others before failing")
      ->capture_default_str();
  app.add_option("--sample-tokens", o.sample.tokens, "tokens generated after training")
      ->capture_default_str();
  app.add_option("--prompt", o.sample.prompt, "text the sample starts from");
  app.add_option("--temperature", o.sample.sampling.temperature, "sampling temperature (0: greedy)")
      ->capture_default_str();
  app.add_option("--top-k", o.sample.sampling.top_k,
                 "sample from the k most likely tokens (0: all)")
      ->capture_default_str();
  app.add_option("--top-p", o.sample.sampling.top_p,
                 "sample from the fewest most likely tokens whose probability reaches p")
      ->capture_default_str();
  o.config = std::make_shared<train::ResolvedConfig>();
  train::add_deepspeed_config_flag(app, o.config);
  // The file as the user named it, also under `bazel run` (which starts in the runfiles).
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      args[i + 1] = o.config->file = train::invocation_path(args[i + 1]);
    } else if (args[i].starts_with("--config=")) {
      o.config->file = train::invocation_path(args[i].substr(9));
      args[i] = "--config=" + o.config->file;
    }
  }
  std::vector<char*> resolved_argv;
  for (std::string& arg : args) resolved_argv.push_back(arg.data());
  train::parse_or_exit(app, argc, resolved_argv.data());
  train::resolve_config(*o.config, app, args);
  o.batch_given = {.train = app.count("--train-batch-size") > 0,
                   .micro = app.count("--batch-size") > 0,
                   .accumulation = app.count("--accumulate") > 0};
  resolve_model(o.run.model, o.model);
  return o;
}

}  // namespace day4
