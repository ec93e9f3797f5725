// The day-4 exercises (TP4.1-TP4.7): what the trainee writes in day4_large_models/exercises.cc.
// The complete versions are in solutions/day4_large_models/exercises.cc. The lab's
// `--sharding exercise-zero1` trains through TP4.1-TP4.3; TP4.6-TP4.7 are the first steps of
// tensor parallelism; //day4_large_models:check tests all seven on 2, 3 and 4 MPI ranks.
#pragma once

#include <cstdint>

#include "common/nn/context.h"
#include "common/nn/flat_parameters.h"
#include "common/nn/module.h"
#include "common/parallel/communicator.h"
#include "common/parallel/sharded_unit.h"

namespace day4 {

using course::Tensor;
namespace nn = course::nn;
namespace parallel = course::parallel;

// TP4.1: the shard of a flat buffer of `numel` elements that rank `rank` of `world_size` owns.
// The buffer is padded at its end to the next multiple of world_size, so every rank owns the
// same number of elements: rank r owns [r s, (r + 1) s) with s = ceil(numel / world_size)
// (the last ranks' shards may lie partly or wholly in the padding).
nn::FlatRange shard_of(int64_t numel, int rank, int world_size);

// TP4.2: ZeRO's gradient reduction. `full_grads` (world_size x s elements, every rank's own
// gradients of the whole flat buffer) becomes, in `shard_grad` (s elements), the average over
// the ranks of this rank's shard: a reduce-scatter, then the division by the rank count.
void reduce_scatter_mean(const Tensor& full_grads, Tensor& shard_grad,
                         parallel::Communicator& comm);

// TP4.3: after the optimizer updated every rank's shard, every rank's full values are the
// updated shards put together in rank order: an all-gather.
void all_gather_shards(const Tensor& shard_values, Tensor& full_values,
                       parallel::Communicator& comm);

// TP4.4: FSDP's FULL_SHARD forward of one block whose parameters `unit` shards: gather the full
// parameters (unit.gather()), run the block, and free them again (unit.release()) so that only
// one block's parameters are whole at a time.
Tensor fsdp_forward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& x,
                    nn::Context& ctx);

// TP4.5: its backward: gather the parameters again, give them zeroed full gradients
// (unit.allocate_gradients()), run the block's backward, reduce-scatter the gradients into the
// shard (unit.reduce_gradients(false), completed by unit.finish_reduction(), which averages
// and frees the full gradients), and free the parameters. Returns the input's gradient.
Tensor fsdp_backward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& dy,
                     nn::Context& ctx);

// TP4.6: tensor parallelism's two mappings (step 1 of the course). f sits where a replicated
// input enters rank-local work: identity forward, its gradients summed over the ranks backward.
// g sits where the ranks' partial results become one replicated value: summed forward,
// identity backward. Returns what `t` becomes through `mapping` in that direction: `t` itself
// or a new tensor holding its sum over the ranks of `comm` (leave `t` as it is).
enum class TpMapping { kF, kG };
Tensor tp_mapping(TpMapping mapping, bool forward, const Tensor& t, parallel::Communicator& comm);

// TP4.7: the output of a column-parallel linear layer gathered (step 2): every rank holds
// x (..., n), its slice of the output features; returns (..., n p) with rank r's values at
// features [r n, (r + 1) n) of every row, on every rank. comm.all_gather() puts the ranks' whole
// tensors one after the other.
Tensor gather_features(const Tensor& x, parallel::Communicator& comm);

}  // namespace day4
