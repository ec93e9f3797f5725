// One flat parameter of sharded data parallelism (ZeRO, FSDP): a group of parameters (a
// transformer block's, say) flattened and cut into equal shards over the data-parallel ranks
// (common/nn/flat_parameters.h pads it so the cut is even). Between uses a rank keeps only its
// shard: the f32 master values and their reduced gradient, which its optimizer updates.
//
// FSDP's mixed precision: with a 16-bit parameter dtype a rank casts its shard before the
// all-gather, so the gather moves and the layers compute from 16-bit full values (half the bytes
// and memory), while the gradients stay f32, are reduced in f32 and update the f32 master shard.
//
//   gather()            all-gather of the shards: the full values, bound to the parameters
//   release()           the full values freed (ZeRO-3 / FSDP after a layer has run)
//   allocate_gradients  zeroed full gradients for a backward pass to add into
//   reduce_gradients    reduce-scatter of the full gradients into this rank's shard, averaged
//
// Communication runs on the communicator's asynchronous work: start_gather() is a prefetch,
// reduce_gradients() returns once the reduction is launched, finish_reduction() completes it.
//
// The shards are cut over a shard group of ranks. Usually that is every data-parallel rank;
// FSDP's HYBRID_SHARD cuts them within a node and keeps a replica per node (the replicate
// group: the ranks at the same place of every node), whose reduced shards are then all-reduced;
// NO_SHARD is a shard group of one rank each.
#pragma once

#include <memory>
#include <vector>

#include "common/nn/flat_parameters.h"
#include "common/parallel/comm/communicator.h"
#include "common/tensor/device_timer.h"

namespace course::parallel {

// The communicators a unit's shards live on.
struct ShardGroups {
  std::shared_ptr<Communicator> world;      // every data-parallel rank
  std::shared_ptr<Communicator> shard;      // the ranks that cut one copy into shards
  std::shared_ptr<Communicator> replicate;  // the ranks holding the same shard (may be 1)
};

// Collective over `world`: shard groups of `shard_size` consecutive ranks (a node's), replicate
// groups across them. Throws unless shard_size divides the world's size.
ShardGroups make_shard_groups(std::shared_ptr<Communicator> world, int shard_size);

// How a unit's full gradients become its shard's: a reduce-scatter (each rank receives its
// shard's sum), or DeepSpeed's reduce_scatter false, an all-reduce of the whole gradient of
// which each rank keeps its shard (twice the bytes moved).
enum class GradientReduction { kReduceScatter, kAllReduce };

class ShardedUnit {
 public:
  // Collective over groups.world: every rank passes parameters of the same shapes; world rank
  // 0's values are the ones sharded. The parameters stay bound to the full values (gathered()).
  // `offload`: the shard lives in host memory (FSDP's CPU offload). `param_dtype`: the full
  // values' dtype (f32, or f16/bf16 for mixed precision).
  ShardedUnit(const std::vector<nn::Parameter*>& params, ShardGroups groups, bool offload = false,
              DType param_dtype = DType::kF32);
  // Shards over every rank of `world`.
  ShardedUnit(const std::vector<nn::Parameter*>& params, std::shared_ptr<Communicator> world)
      : ShardedUnit(params, ShardGroups{.world = world, .shard = world, .replicate = nullptr}) {}

  // This rank's shard, values and gradient: what the optimizer is given.
  nn::Parameter& shard() { return shard_; }
  nn::FlatRange shard_range() const { return flat_.shard(groups_.shard->rank()); }

  void start_gather();  // launches the all-gather of the full values, unless they are there
  void gather();        // completes it (starting it first if need be) and binds the parameters
  bool gathered() const { return flat_.values().defined() && !gathering_; }
  // The full values are there or on their way (DeepSpeed counts both as live).
  bool holds_values() const { return flat_.values().defined() || gathering_; }
  void release();  // frees the full values: the parameters are undefined until gather()
  // Launches the all-gather of the updated shards into the full values the parameters hold
  // (ZeRO-1 and 2 after each optimizer step); finish_refresh() completes it.
  void start_refresh();
  void finish_refresh();
  // This rank's shard values as the all-gather sends them: on the device, in the parameter
  // dtype (a copy unless the shard is already that, kept in outgoing_ until the gather is done).
  const Tensor& outgoing_shard();
  DType param_dtype() const { return param_dtype_; }

  int64_t padded_numel() const { return flat_.padded_numel(); }  // the full values' elements
  int64_t numel() const { return flat_.numel(); }                // without the padding
  void allocate_gradients();  // zeroed full gradients, bound to the parameters
  bool has_gradients() const { return flat_.grads().defined(); }
  // Launches the reduction of the full gradients into this rank's shard; `keep` keeps the
  // full gradients bound (ZeRO-1 zeroes and reuses them), otherwise they are freed once the
  // reduction is complete.
  void reduce_gradients(bool keep, GradientReduction how = GradientReduction::kReduceScatter);
  // Waits for the reduction, adds its average over the ranks into shard().grad (so
  // micro-batches accumulate) and frees the full gradients unless kept.
  void finish_reduction();

  // Zeroes the shard's gradient, and the full gradients when bound.
  void zero_grad();

  // Seconds the compute stream waited for this unit's gathers and reductions: the communication
  // that computation did not hide (device time; reads the device: for summaries).
  double waited_seconds() { return waits_.total_seconds(); }

 private:
  ShardGroups groups_;
  nn::FlatParameters flat_;
  bool offload_;
  DType param_dtype_;
  nn::Parameter shard_;
  Tensor outgoing_;  // an offloaded shard's copy on the device, being gathered
  Tensor incoming_;  // the full values being gathered
  WorkPtr gathering_;
  WorkPtr refreshing_;
  Tensor reduced_;              // the gradient sum being reduced: this rank's block, or all of it
  bool reduced_whole_ = false;  // an all-reduce: this rank's block is a slice of reduced_
  WorkPtr reducing_;
  bool keep_gradients_ = false;
  IntervalTimer waits_;
  void wait_for(Work& work);
};

}  // namespace course::parallel
