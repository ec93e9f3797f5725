// The GPT lab's command line: the shared run flags (common/train/lab_flags.h, no image flags)
// with language-model defaults, plus the text, the context, activation checkpointing, gradient
// accumulation, data parallelism (DDP or sharded: ZeRO 1-3, FSDP's strategies), pipeline
// parallelism, the memory estimate and budget, and the generated sample.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/data/fashion_mnist.h"
#include "common/data/text_corpus.h"
#include "common/models/gpt/gpt.h"
#include "common/models/gpt/sampling.h"
#include "common/models/model_registry.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/data_parallel/data_parallel_model.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/train/deepspeed_config.h"
#include "common/train/lab_flags.h"

namespace day4 {

// The --sharding value that runs ZeRO-1 through the trainee's TP4.1-TP4.3.
inline constexpr const char* kExerciseZero1 = "exercise-zero1";

// Flags are parsed once into these parts; nothing below the options compares their names, and
// each function takes the parts it reads.

// --model resolved once (the options' constructor and parse_gpt_options): its family and, for a
// language model, its preset; with the flags that change what the model holds.
struct LabModel {
  std::string name;
  const course::nn::ModelFamilySpec* family = nullptr;  // its registration (model_registry.h)
  std::optional<course::nn::GptConfig> language;        // a language model's preset (none: images)
  int64_t context = 0;  // --context: tokens per window (0: the preset's)
  bool checkpoint_activations = false;

  bool images() const { return !language.has_value(); }
  // Tokens per training window: --context, or the preset's context.
  int64_t window() const { return context > 0 ? context : language->context; }
};

// The language models' text and the image models' images (days 1-3's datasets).
struct TextData {
  std::string dir = course::kFortunesDir;  // fortune-format text files
  double val_fraction = 0.05;              // documents held out for validation
  // > 0: this many random tokens over the model's vocabulary in place of the text (throughput)
  int64_t synthetic_tokens = 0;
};
struct ImageData {
  std::string dir = course::kFashionMnistDir;
  int64_t size = 28;        // side the images are resized to
  int64_t test_subset = 0;  // > 0: test on the first N test images only

  bool operator==(const ImageData&) const = default;
};

// --optimizer, its own options and its learning-rate schedule (the rate, momentum and weight
// decay are the run's: train::RunFlags).
struct OptimizerChoice {
  course::optim::OptimizerKind kind = course::optim::OptimizerKind::kAdamW;
  std::optional<float> beta1, beta2, eps;  // the Adam family's (unset: the optimizer's defaults)
  std::optional<int64_t> freeze_step;      // the 1-bit optimizers' warm-up (unset: 100 steps)
  bool exp_avg_mask = false;               // 1-bit: DeepSpeed's exp_avg_mask, at the freeze
  bool exercise_onebit = false;            // 1-bit: the workers compress with TP4.22's code
  course::OneBitLambCoefficients onebit_lamb;  // 1-bit LAMB's clamps and factor
  bool in_backward = false;                    // each group updated as its gradients become final
  int64_t overflow_drill = 0;  // f16: > 0, the step whose gradients get an inf on the last rank
  course::optim::ScheduleKind schedule = course::optim::ScheduleKind::kCosine;  // cosine: to lr/10
  int64_t decay_steps = 0;    // the schedule's length (0: the run's steps)
  int64_t warmup_steps = 50;  // warm-up before it (at most the run's steps)
  course::optim::WarmupShape warmup_shape = course::optim::WarmupShape::kLinear;
};

// --sharding and its options: how the data-parallel ranks hold the model. Replicated (DDP on
// several ranks, one process alone), sharded by a strategy of the library
// (parallel/data_parallel/sharding.h), or by the trainee's ZeRO-1 (exercise-zero1, TP4.1-TP4.3).
struct DataParallelChoice {
  std::optional<course::parallel::Sharding> library;  // the library's strategy
  bool trainee_zero1 = false;
  course::parallel::BackwardPrefetch backward_prefetch = course::parallel::BackwardPrefetch::kPre;
  bool forward_prefetch = false;
  int shard_group_size = 0;  // hybrid-shard's group (0: the ranks of a node)
  bool cpu_offload = false;  // shards and the optimizer's step in host memory
  course::DType param_dtype = course::DType::kF32;  // sharded modes' gathered values
  // DeepSpeed's buckets and overlap (the sharded modes; DDP takes the reduce bucket's size).
  course::parallel::ZeroCommunication communication;

  bool replicated() const { return !library && !trainee_zero1; }
  // The sharding the ranks' memory holds: the library's, or ZeRO-1's for the trainee's.
  std::optional<course::parallel::Sharding> held() const {
    return trainee_zero1 ? course::parallel::Sharding::kZero1 : library;
  }
  // --sharding's value: "none", a strategy's name or "exercise-zero1" (messages, checkpoints).
  std::string flag() const;
  // The library's data-parallel mode (DDP or a sharding strategy).
  course::parallel::DataParallelOptions library_options() const;
};

// The pipeline axis: its stages and how a step runs through them.
struct PipelineChoice {
  int stages = 1;         // > 1: a stage per rank of the pp axis
  int micro_batches = 4;  // of --batch-size windows per pipeline and step
  course::parallel::PipelineSchedule schedule =
      course::parallel::PipelineSchedule::kOneForwardOneBackward;
  int virtual_stages = 1;  // model chunks per rank (interleaved: 2 or more)
  course::parallel::StageBalance balance = course::parallel::StageBalance::kLayers;
  bool exercises = false;  // cut, scheduled and connected by TP4.6-TP4.8
  std::string timeline;    // PNG of the last step's forwards and backwards
};

// Model parallelism: the grid's cp, tp and pp axes (the data-parallel axis takes the rest).
struct GridChoice {
  int tensor_parallel = 1;         // > 1: each layer cut over this many ranks
  bool sequence_parallel = false;  // and the activations between them along the sequence
  int context_parallel = 1;        // > 1: each window's positions cut over this many ranks
  PipelineChoice pipeline;

  // Any axis above 1 (--tensor-parallel, --context-parallel or --pipeline-stages).
  bool model_parallel() const {
    return tensor_parallel > 1 || pipeline.stages > 1 || context_parallel > 1;
  }
  // The memory estimate covers the run: data parallelism, with or without context parallelism.
  bool memory_estimated() const { return tensor_parallel == 1 && pipeline.stages == 1; }
  int64_t ranks_per_replica() const {
    return int64_t{context_parallel} * tensor_parallel * pipeline.stages;
  }
};

// The memory estimate, its budget and the throughput model.
struct EstimateChoice {
  int64_t max_memory_mb = 0;        // > 0: refuse a run estimated above it, and cap the allocator
  bool estimate_only = false;       // print the memory estimate and exit (any preset)
  int estimate_ranks = 0;           // ranks of that estimate (0: the world's size)
  int throughput_gpus = 0;          // > 0: print the throughput model's grids of N GPUs and exit
  std::string throughput_megatron;  // a row of Megatron-LM's table (or all): printed, then exit

  // Figures only: nothing is trained.
  bool figures_only() const {
    return estimate_only || throughput_gpus > 0 || !throughput_megatron.empty();
  }
};

// The text a language model generates after training.
struct SampleChoice {
  int64_t tokens = 300;  // 0: none
  std::string prompt = "\n";
  course::nn::SamplingOptions sampling{.temperature = 0.8f};
};

struct GptLabOptions {
  GptLabOptions();

  course::train::RunFlags run;  // the shared run flags (run.model: --model as given)
  LabModel model;               // run.model resolved
  TextData text;
  ImageData images;
  uint32_t seed = 0;             // of weights, windows and sampling
  int64_t steps_per_epoch = 0;   // 0: every training window or image once
  int64_t train_batch_size = 0;  // > 0: must equal batch x micro-batches x data-parallel ranks
  // Which of DeepSpeed's three batch sizes the file or the command line gave
  // (complete_train_batch).
  struct {
    bool train = false, micro = false, accumulation = false;
  } batch_given;
  OptimizerChoice optimizer;
  bool cuda_graphs = false;  // one process: the step replayed as a captured graph
  DataParallelChoice data_parallel;
  GridChoice grid;
  EstimateChoice estimate;
  SampleChoice sample;
  double comm_timeout = 300;                              // seconds a rank waits for the others
  std::shared_ptr<course::train::ResolvedConfig> config;  // what --config set (file empty: none)
};

// Parses argv and resolves --model; on --help prints the usage and exits 0, on bad flags prints
// one message and exits non-zero.
GptLabOptions parse_gpt_options(int argc, char** argv);

// Checks value ranges and combinations that flags alone cannot (throws course::Error).
void validate(const GptLabOptions& options);

// DeepSpeed's rule for a --train-batch-size given (by the file or the command line): with
// --batch-size and --accumulate both given, checked against them over the run's data-parallel
// ranks (the pipeline's --micro-batches being its accumulation), else the missing one derived.
// Throws when they do not divide or multiply to it.
void complete_train_batch(GptLabOptions& options, int ranks);

// complete_train_batch over `ranks` (or --estimate-ranks), then validate, as a check every rank
// meets alike (rank 0 alone says why).
void validate_on_every_rank(GptLabOptions& options, int ranks);

// Throws when --sharding (or the exercises' ZeRO-1) is asked of a run of fewer than 2 ranks, but
// for ZeRO-Offload on one (zero1 or zero2 with --cpu-offload).
void validate_run_ranks(const DataParallelChoice& data_parallel, int ranks);

// Throws unless `ranks` (a run's, or --estimate-ranks: `estimate_ranks`) cut into whole grids of
// --context-parallel x --tensor-parallel x --pipeline-stages ranks.
void validate_grid_ranks(const GridChoice& grid, int ranks, bool estimate_ranks);

}  // namespace day4
