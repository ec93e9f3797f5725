// What sharded data parallelism keeps on each rank between uses (the ZeRO paper's stages and
// FSDP's strategies), as the flags name them:
//   zero1           optimizer states sharded; full parameters and gradients on every rank
//   zero2           gradients sharded too: a block's full gradients freed after its reduction
//   zero3           parameters sharded too: gathered before a block's forward, freed after,
//                   gathered again for its backward (FSDP's FULL_SHARD)
//   shard-grad-op   gathered before forward, kept until after backward (FSDP's SHARD_GRAD_OP)
//   hybrid-shard    zero3 within a shard group (a node), replicated across groups (HYBRID_SHARD)
//   no-shard        every rank a whole copy, gradients all-reduced (FSDP's NO_SHARD: DDP)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor/dtype.h"

namespace course::parallel {

enum class Sharding { kZero1, kZero2, kZero3, kShardGradOp, kHybridShard, kNoShard };

// When to launch the all-gather of the previous block during backward: before the current
// block's gradient computation (most overlap, two blocks' values held) or after it.
enum class BackwardPrefetch { kNone, kPre, kPost };

// DeepSpeed's ZeRO communication settings (ds_config.json's zero_optimization), the sizes in
// elements as DeepSpeed counts them.
struct ZeroCommunication {
  // reduce_bucket_size: the blocks' reductions wait until this many gradient elements do, then
  // launch together (reduction_buckets.h; 0: each block's as soon as its backward ends).
  int64_t reduce_bucket_elements = 0;
  // allgather_bucket_size: ZeRO-1 and 2 gather the updated shards after the step with at most
  // this many elements in flight (0: every unit's at once).
  int64_t allgather_bucket_elements = 0;
  bool overlap = true;         // overlap_comm: reductions run on while backward goes on
  bool reduce_scatter = true;  // reduce_scatter; off: all-reduce, each rank keeping its shard
  // Stage 3's parameter fetching, for the strategies that free parameters between uses:
  // stage3_prefetch_bucket_size: once a block's values are there, the all-gathers of the blocks
  // after it in the pass (before it, in backward) are launched while fewer than this many
  // elements are being prefetched (0: none); unset, FSDP's one-block prefetch
  // (backward_prefetch, forward_prefetch) instead.
  std::optional<int64_t> prefetch_bucket_elements;
  // stage3_max_live_parameters: a prefetch stops where the gathered values would pass this.
  int64_t max_live_elements = 1'000'000'000;
  // stage3_param_persistence_threshold: parameter tensors of at most this many elements stay
  // gathered between uses, their updated shards all-gathered after each step as in ZeRO-2.
  int64_t persistence_threshold = 0;
};

struct ShardingOptions {
  Sharding sharding = Sharding::kZero3;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kPre;
  bool forward_prefetch = false;  // launch the next block's all-gather before this one runs
  int shard_group_size = 0;       // hybrid-shard's group (0: the ranks of a node)
  // FSDP's CPU offload: shards (values, gradients) and so the optimizer's step live in host
  // memory; a gather copies the shard to the device first, a reduction copies it back.
  bool cpu_offload = false;
  // FSDP's mixed precision: the dtype of the gathered values the layers compute from (f16 or
  // bf16 halves gathers and memory); master shards, gradients and reductions stay f32.
  DType param_dtype = DType::kF32;
  ZeroCommunication communication;
};

// What `c` changes from the defaults, for a run's description: ", reduce buckets of N
// elements, all-gathers of at most M, reductions not overlapped, all-reduce" (empty: none).
std::string communication_note(const ZeroCommunication& c);

// The ranks one copy of the model is cut over with these options on `world_size` ranks of
// `node_size` per node: hybrid-shard's group, 1 for no-shard, else all of them.
int shard_group_size(const ShardingOptions& options, int world_size, int node_size);

// What a strategy does with a unit's full values and gradients.
struct ShardingPolicy {
  bool reshard_after_forward;   // free the full values once the block's forward is done
  bool reshard_after_backward;  // free them once its backward is done
  bool keep_full_gradients;     // ZeRO-1: the full gradients stay allocated between steps
};
ShardingPolicy policy_of(Sharding sharding);

// "zero1", "zero2", "zero3", "shard-grad-op", "hybrid-shard", "no-shard"
const std::vector<std::string>& sharding_names();
Sharding parse_sharding(const std::string& name);  // throws listing the names
std::string sharding_name(Sharding sharding);
// A data-parallel mode as the flags name it: a strategy's name, or "none" (DDP) without one.
std::string data_parallel_mode_name(std::optional<Sharding> sharding);
// The inverse: "none" or a strategy's name (throws listing the names).
std::optional<Sharding> parse_data_parallel_mode(const std::string& name);
BackwardPrefetch parse_backward_prefetch(const std::string& name);  // "pre", "post", "none"
std::string backward_prefetch_name(BackwardPrefetch prefetch);

}  // namespace course::parallel
