// Where one rank's memory goes in a GPT training step, before running it: parameters,
// gradients, optimizer states, activations (layer by layer), communication buffers and the
// largest temporaries, for any preset, batch, sequence length, compute precision, activation
// checkpointing, optimizer and data-parallel mode (one process, DDP, ZeRO 1-3, FSDP's
// shard-grad-op) on any number of ranks. The figures follow what this repository's layers and
// wrappers hold at the step's peak (the start of the backward pass), so the day-4 lab can print
// them before a run, refuse a run that would not fit, and be checked against the allocator's
// measured peak (common/parallel/tests/memory_estimate_test.cc states the tolerance). Under
// context parallelism every activation is a rank's tokens' (ring attention keeps no (T, T)
// matrix), so the activations are those of a context cp times shorter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/parallel/data_parallel/sharded_group.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/parallel/data_parallel/stage3_prefetch.h"
#include "common/tensor/dtype.h"

namespace course::parallel {

// How a data-parallel mode holds a model's state (parameters, gradients, optimizer states,
// buffers), whatever the model.
struct StatePlan {
  optim::OptimizerKind optimizer = optim::OptimizerKind::kAdamW;
  std::optional<Sharding> sharding;  // none: one process or DDP (sharding.h)
  int ranks = 1;
  int shard_group_size = 0;         // hybrid-shard's (0: every rank, as if on one node)
  bool cpu_offload = false;         // shards and optimizer states in host memory
  DType param_dtype = DType::kF32;  // sharded modes' gathered values (16-bit: mixed precision)
  bool backward_prefetch = true;    // pre: the previous unit gathered while this one computes
  // DeepSpeed's stage 3 (sharding.h's ZeroCommunication): its prefetch in place of FSDP's when
  // set, and the tensors of at most persistence_threshold elements always gathered.
  std::optional<PrefetchBudget> stage3_prefetch;
  int64_t persistence_threshold = 0;
  int64_t bucket_bytes = kBucketCapBytes;  // DDP's buckets (bucket_plan.h)
  int64_t first_bucket_bytes = kFirstBucketCapBytes;
};

struct MemoryPlan {
  nn::GptConfig model;
  int64_t batch = 1;            // sequences per rank and micro-batch
  int64_t context = 0;          // tokens per sequence (0: the model's context)
  DType compute = DType::kF32;  // autocast's dtype (f32: no autocast)
  bool checkpoint_activations = false;
  int context_parallel = 1;  // ranks each sequence is cut over: a rank holds context / cp tokens
  StatePlan state;
};

// Activations a step saves for backward, one part of the model: `bytes` for each of `count`
// layers alike (a GPT's blocks), or once.
struct ActivationPart {
  std::string name;
  int64_t bytes = 0;
  int64_t count = 1;
  int64_t total() const { return bytes * count; }
};

struct MemoryEstimate {
  int64_t parameters = 0;        // full values held at the peak, and the shards' master values
  int64_t gradients = 0;         // full gradients held at the peak, and the shards' gradients
  int64_t optimizer_states = 0;  // momentum / Adam moments, of what this rank updates
  int64_t activations = 0;       // saved for backward, every layer
  int64_t communication = 0;     // DDP's buckets, reduce-scatter outputs
  int64_t temporaries = 0;       // the loss's gradient and casts alive at the peak
  int64_t offloaded = 0;         // in host memory with CPU offload (not in total())
  // Activations by part: the embedding, the blocks (each of 12), ...
  std::vector<ActivationPart> activation_layers;
  int64_t total() const;
};

MemoryEstimate estimate_memory(const MemoryPlan& plan);

// A model's parameters as the data-parallel modes hold them: the element counts of the root's
// parameters (before and after the sharding units) and of each unit's, in parameters() order.
struct ParameterLayout {
  std::vector<int64_t> before, after;
  std::vector<std::vector<int64_t>> units;
};

// Fills the parameters, gradients, optimizer states and communication buffers of `layout`
// under `state`'s mode.
void add_model_state(const StatePlan& state, const ParameterLayout& layout, MemoryEstimate& e);

// What the caching allocator hands out for `count` tensors of `bytes` each: its blocks are
// rounded up (common/tensor/allocator.h), which matters for small models.
int64_t allocator_bytes(int64_t count, int64_t bytes);

// A table of the estimate ("parameters  474.0 MiB ..."), one line per component.
std::string describe(const MemoryEstimate& estimate);

// The ZeRO paper's per-rank bytes for mixed-precision Adam (2 bytes of parameters, 2 of
// gradients, K = 12 of optimizer states per parameter): 16 psi, 4 psi + 12 psi / N,
// 2 psi + 14 psi / N, 16 psi / N for stages 0 (DDP) to 3.
int64_t zero_paper_bytes(int64_t psi, int stage, int ranks);

}  // namespace course::parallel
