// The sharding strategies' names and policies.
#include "common/parallel/data_parallel/sharding.h"

#include "common/core/error.h"

namespace course::parallel {

ShardingPolicy policy_of(Sharding sharding) {
  switch (sharding) {
    case Sharding::kZero1:
      return {.reshard_after_forward = false,
              .reshard_after_backward = false,
              .keep_full_gradients = true};
    case Sharding::kZero2:
    case Sharding::kNoShard:
      return {.reshard_after_forward = false,
              .reshard_after_backward = false,
              .keep_full_gradients = false};
    case Sharding::kZero3:
    case Sharding::kHybridShard:
      return {.reshard_after_forward = true,
              .reshard_after_backward = true,
              .keep_full_gradients = false};
    case Sharding::kShardGradOp:
      return {.reshard_after_forward = false,
              .reshard_after_backward = true,
              .keep_full_gradients = false};
  }
  COURSE_FAIL("unknown sharding strategy");
}

std::string communication_note(const ZeroCommunication& c) {
  std::string note;
  if (c.reduce_bucket_elements > 0) {
    note += ", reduce buckets of " + std::to_string(c.reduce_bucket_elements) + " elements";
  }
  if (c.allgather_bucket_elements > 0) {
    note += ", all-gathers of at most " + std::to_string(c.allgather_bucket_elements);
  }
  if (c.prefetch_bucket_elements) {
    note += ", stage-3 prefetch of " + std::to_string(*c.prefetch_bucket_elements) +
            " elements with at most " + std::to_string(c.max_live_elements) + " live";
  }
  if (c.persistence_threshold > 0) {
    note +=
        ", tensors of at most " + std::to_string(c.persistence_threshold) + " elements persistent";
  }
  if (!c.overlap) note += ", reductions not overlapped";
  if (!c.reduce_scatter) note += ", all-reduce";
  return note;
}

const std::vector<std::string>& sharding_names() {
  static const std::vector<std::string> names = {"zero1",         "zero2",        "zero3",
                                                 "shard-grad-op", "hybrid-shard", "no-shard"};
  return names;
}

Sharding parse_sharding(const std::string& name) {
  const std::vector<std::string>& names = sharding_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Sharding>(i);
  }
  COURSE_FAIL("unknown sharding '", name,
              "' (known: zero1, zero2, zero3, shard-grad-op, hybrid-shard, no-shard)");
}

std::string sharding_name(Sharding sharding) {
  return sharding_names().at(static_cast<size_t>(sharding));
}

std::string data_parallel_mode_name(std::optional<Sharding> sharding) {
  return sharding ? sharding_name(*sharding) : "none";
}

std::optional<Sharding> parse_data_parallel_mode(const std::string& name) {
  if (name == "none") return std::nullopt;
  return parse_sharding(name);
}

int shard_group_size(const ShardingOptions& options, int world_size, int node_size) {
  if (options.sharding == Sharding::kNoShard) return 1;
  if (options.sharding != Sharding::kHybridShard) return world_size;
  return options.shard_group_size > 0 ? options.shard_group_size : node_size;
}

BackwardPrefetch parse_backward_prefetch(const std::string& name) {
  if (name == "pre") return BackwardPrefetch::kPre;
  if (name == "post") return BackwardPrefetch::kPost;
  COURSE_CHECK(name == "none", "unknown backward prefetch '", name, "' (pre, post or none)");
  return BackwardPrefetch::kNone;
}

std::string backward_prefetch_name(BackwardPrefetch prefetch) {
  switch (prefetch) {
    case BackwardPrefetch::kPre:
      return "pre";
    case BackwardPrefetch::kPost:
      return "post";
    case BackwardPrefetch::kNone:
      return "none";
  }
  COURSE_FAIL("unknown backward prefetch");
}

}  // namespace course::parallel
