// Sharded data parallelism (ZeRO stages 1-3, FSDP's FULL_SHARD and SHARD_GRAD_OP) over a
// model whose repeated blocks sit in one Sequential (a GPT's transformer blocks, a network's
// layers): every block with parameters becomes a ShardedBlock, and the model's other parameters
// (embeddings, final LayerNorm, tied output layer) form the root unit, gathered for the whole
// step. Each rank's optimizer updates only its shards (shard_parameters()), so optimizer states
// are sharded in every stage; the stages differ in what else stays sharded (sharding.h).
//
// A step, on every rank:
//   sdp.zero_grad(); y = sdp.forward(x); sdp.backward(dy);   // gradients averaged into shards
//   optimizer.step(); sdp.after_step();                      // ZeRO-1/2: all-gather the update
// The model must be used through this wrapper (also for evaluation and sampling): between
// steps its parameters may hold no values (zero3) and its gradients are not bound.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/sequential.h"
#include "common/parallel/data_parallel/sharded_block.h"

namespace course::parallel {

// The units sharded data parallelism makes of `model`: ("root", the parameters outside the
// blocks) when there are any, then ("<block's name>", its parameters) for each block of
// `blocks` with parameters; with a persistence threshold (sharded_group.h) each of these is
// followed by ("<name>.persistent", its tensors at or below it), and keeps the others. Works on
// the plain model too (to rebuild it from saved shards).
using ShardingUnits = std::vector<std::pair<std::string, std::vector<nn::Parameter*>>>;
ShardingUnits sharding_units(nn::Module& model, nn::Sequential& blocks,
                             int64_t persistence_threshold = 0);

class ShardedDataParallel : public nn::Module {
 public:
  // Collective over `comm`. `blocks` is a Sequential inside `model`; rank 0's values are used.
  ShardedDataParallel(nn::Module& model, nn::Sequential& blocks, std::shared_ptr<Communicator> comm,
                      const ShardingOptions& options = {});
  std::vector<Child> children() override { return {{"", &model_}}; }

  // This rank's shards, one per unit of sharding_units() ("root.shard", "3.shard",
  // "3.persistent.shard"), for the optimizer.
  std::vector<std::pair<std::string, nn::Parameter*>> shard_parameters();
  Communicator& communicator() const { return *groups_.world; }
  int shard_group_size() const { return groups_.shard->size(); }  // ranks one copy is cut over
  int64_t persistence_threshold() const { return persistence_threshold_; }  // sharding_units'
  void zero_grad() override;  // the shards' gradients (and ZeRO-1's full ones)
  // After the optimizer's step: ZeRO-1 and 2, and every strategy's persistent units, all-gather
  // the updated shards into the full values (the others are gathered when the next pass needs
  // them).
  void after_step();
  // Every unit's full values gathered (to read or save the whole model), or released again (the
  // persistent units stay gathered).
  void gather_all();
  void release_all();
  // Seconds every unit waited for its gathers and reductions since construction.
  double waited_seconds();
  // Bytes this rank's collectives sent since construction, over every group the strategy uses
  // (HYBRID_SHARD's and NO_SHARD's replicas reduce over their own group).
  double bytes_sent() const;
  // Collective: the squared L2 norm of the whole model's reduced gradient, from the shards (each
  // element once: summed over a shard group, whose replicas hold the same shards).
  Tensor squared_gradient_norm();

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  std::vector<std::pair<std::string, ShardedUnit*>> named_units();  // sharding_units' order
  std::vector<ShardedGroup*> groups();                              // the root's, then the blocks'
  std::vector<ShardedUnit*> units();
  std::vector<ShardedUnit*> units_gathered_between_steps();
  void link_blocks(const ZeroCommunication& communication);

  nn::Module& model_;
  ShardGroups groups_;
  ShardingPolicy policy_;
  std::vector<std::pair<std::string, ShardedBlock*>> blocks_;
  std::unique_ptr<ShardedGroup> root_;  // null when every parameter is in a block
  ReductionBuckets reductions_;
  std::unique_ptr<Stage3Prefetch> stage3_;  // DeepSpeed's prefetch, when its bucket is set
  int64_t allgather_bucket_elements_;
  int64_t persistence_threshold_;
};

}  // namespace course::parallel
