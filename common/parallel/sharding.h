// What sharded data parallelism keeps on each rank between uses (the ZeRO paper's stages and
// FSDP's strategies), as the flags name them:
//   zero1           optimizer states sharded; full parameters and gradients on every rank
//   zero2           gradients sharded too: a block's full gradients freed after its reduction
//   zero3           parameters sharded too: gathered before a block's forward, freed after,
//                   gathered again for its backward (FSDP's FULL_SHARD)
//   shard-grad-op   gathered before forward, kept until after backward (FSDP's SHARD_GRAD_OP)
#pragma once

#include <string>
#include <vector>

namespace course::parallel {

enum class Sharding { kZero1, kZero2, kZero3, kShardGradOp };

// When to launch the all-gather of the previous block during backward: before the current
// block's gradient computation (most overlap, two blocks' values held) or after it.
enum class BackwardPrefetch { kNone, kPre, kPost };

struct ShardingOptions {
  Sharding sharding = Sharding::kZero3;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kPre;
  bool forward_prefetch = false;  // launch the next block's all-gather before this one runs
};

// What a strategy does with a unit's full values and gradients.
struct ShardingPolicy {
  bool reshard_after_forward;   // free the full values once the block's forward is done
  bool reshard_after_backward;  // free them once its backward is done
  bool keep_full_gradients;     // ZeRO-1: the full gradients stay allocated between steps
};
ShardingPolicy policy_of(Sharding sharding);

const std::vector<std::string>& sharding_names();  // "zero1", "zero2", "zero3", "shard-grad-op"
Sharding parse_sharding(const std::string& name);  // throws listing the names
std::string sharding_name(Sharding sharding);
BackwardPrefetch parse_backward_prefetch(const std::string& name);  // "pre", "post", "none"
std::string backward_prefetch_name(BackwardPrefetch prefetch);

}  // namespace course::parallel
