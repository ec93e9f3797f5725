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
#include "common/nn/sampling.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/data_parallel/data_parallel_model.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/train/deepspeed_config.h"
#include "common/train/lab_flags.h"

namespace day4 {

// The --sharding value that runs ZeRO-1 through the trainee's TP4.1-TP4.3.
inline constexpr const char* kExerciseZero1 = "exercise-zero1";

// Flags are parsed once into these types; nothing below the options compares their names.

// --sharding: how the data-parallel ranks hold the model. Replicated (DDP on several ranks, one
// process alone), sharded by a strategy of the library (parallel/data_parallel/sharding.h), or by
// the trainee's ZeRO-1 (exercise-zero1, TP4.1-TP4.3).
struct DataParallelChoice {
  std::optional<course::parallel::Sharding> library;  // the library's strategy
  bool trainee_zero1 = false;

  bool replicated() const { return !library && !trainee_zero1; }
  // The sharding the ranks' memory holds: the library's, or ZeRO-1's for the trainee's.
  std::optional<course::parallel::Sharding> held() const {
    return trainee_zero1 ? course::parallel::Sharding::kZero1 : library;
  }
};

struct GptLabOptions : course::train::RunFlags {
  GptLabOptions();

  uint32_t seed = 0;                                 // of weights, windows and sampling
  std::string text_dir = course::kFortunesDir;       // fortune-format text files
  std::string image_dir = course::kFashionMnistDir;  // the image models' dataset (days 1-3's)
  int64_t image_size = 28;                           // side the images are resized to
  int64_t test_subset = 0;  // > 0: the image models test on the first N test images only
  course::optim::OptimizerKind optimizer = course::optim::OptimizerKind::kAdamW;
  std::optional<float> beta1, beta2, eps;  // the Adam family's (unset: the optimizer's defaults)
  std::optional<int64_t> freeze_step;      // the 1-bit optimizers' warm-up (unset: 100 steps)
  bool optimizer_in_backward = false;      // each group updated as its gradients become final
  bool cuda_graphs = false;                // one process: the step replayed as a captured graph
  std::string lr_schedule = "cosine";      // cosine (to lr / 10), constant, linear (to 0)
  int64_t lr_decay_steps = 0;              // the schedule's length (0: the run's steps)
  int64_t train_batch_size = 0;  // > 0: must equal batch x micro-batches x data-parallel ranks
  std::shared_ptr<course::train::ResolvedConfig> config;  // what --config set (file empty: none)
  int64_t context = 0;          // tokens per window; 0: the model's context
  double val_fraction = 0.05;   // documents held out for validation
  int64_t steps_per_epoch = 0;  // 0: every training window once
  int64_t warmup_steps = 50;    // linear warm-up, then cosine decay to lr / 10
  bool checkpoint_activations = false;
  int64_t max_memory_mb = 0;         // > 0: refuse a run estimated above it, and cap the allocator
  bool estimate_only = false;        // print the memory estimate and exit (any preset)
  int estimate_ranks = 0;            // ranks of that estimate (0: the world's size)
  int throughput_gpus = 0;           // > 0: print the throughput model's grids of N GPUs and exit
  DataParallelChoice data_parallel;  // --sharding
  course::parallel::BackwardPrefetch backward_prefetch = course::parallel::BackwardPrefetch::kPre;
  bool forward_prefetch = false;
  int shard_group_size = 0;  // hybrid-shard's group (0: the ranks of a node)
  bool cpu_offload = false;  // shards and the optimizer's step in host memory
  course::DType param_dtype = course::DType::kF32;  // sharded modes' gathered values
  int tensor_parallel = 1;         // > 1: each layer cut over this many ranks (the tp axis)
  bool sequence_parallel = false;  // and the activations between them along the sequence
  int context_parallel = 1;  // > 1: each window's positions cut over this many ranks (cp axis)
  int pipeline_stages = 1;   // > 1: pipeline parallelism, a stage per rank of the pp axis
  int micro_batches = 4;     // of batch_size windows per pipeline and step
  course::parallel::PipelineSchedule schedule =
      course::parallel::PipelineSchedule::kOneForwardOneBackward;
  int virtual_stages = 1;  // model chunks per rank (interleaved: 2 or more)
  std::string timeline;    // pipeline: PNG of the last step's forwards and backwards
  course::parallel::StageBalance pipeline_balance = course::parallel::StageBalance::kLayers;
  bool pipeline_exercises = false;  // the pipeline cut, scheduled and connected by TP4.6-TP4.8
  double comm_timeout = 300;        // seconds a rank waits for the others
  int64_t sample_tokens = 300;      // generated after training (0: none)
  std::string prompt = "\n";
  course::nn::SamplingOptions sampling{.temperature = 0.8f};  // of the sample
};

// Parses argv; on --help prints the usage and exits 0, on bad flags prints one message and
// exits non-zero.
GptLabOptions parse_gpt_options(int argc, char** argv);

// --sharding's value: "none", a strategy's name or "exercise-zero1" (messages, checkpoints).
std::string sharding_flag(const GptLabOptions& options);

// The library's data-parallel mode the flags choose (DDP or a sharding strategy).
course::parallel::DataParallelOptions data_parallel_options(const GptLabOptions& options);

// --model names an image model (vit-..., coatnet-...): day4_large_models/image_trainer.h.
bool image_model(const GptLabOptions& options);

// Model parallelism's flags are given (--tensor-parallel, --context-parallel or
// --pipeline-stages above 1).
bool model_parallel(const GptLabOptions& options);

// The memory estimate covers the run: data parallelism, with or without context parallelism
// (not --tensor-parallel or --pipeline-stages).
bool memory_estimated(const GptLabOptions& options);

// Checks value ranges and combinations that flags alone cannot (throws course::Error).
void validate(const GptLabOptions& options);

// Throws unless --train-batch-size (when given) is the windows or images of a step over every
// replica: --batch-size x `micro_batches` x `data_ranks`.
void validate_train_batch(const GptLabOptions& options, int64_t micro_batches, int data_ranks);

// Throws when --sharding (or the exercises' ZeRO-1) is asked of a run of fewer than 2 ranks, or
// --cuda-graphs of a run of several.
void validate_run_ranks(const GptLabOptions& options, int ranks);

// Throws unless `ranks` (a run's, or --estimate-ranks) cut into whole grids of --context-parallel
// x --tensor-parallel x --pipeline-stages ranks.
void validate_grid_ranks(const GptLabOptions& options, int ranks);

}  // namespace day4
