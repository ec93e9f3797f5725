// Day 4 exercises TP4.1-TP4.7 (the lab sheet is day4_large_models/README.md).
// solutions/day4_large_models/exercises.cc is the complete version; day4_large_models/
// exercises.cc is generated from it by tools/labgen with every exercise replaced by a stub:
// trainees edit that one.
#include "day4_large_models/exercises.h"

#include "common/core/exercise.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"

namespace day4 {

nn::FlatRange shard_of(int64_t numel, int rank, int world_size) {
  // BEGIN EXERCISE TP4.1: equal shards of the buffer padded to a multiple of the ranks
  const int64_t size = (numel + world_size - 1) / world_size;
  return {.begin = rank * size, .end = (rank + 1) * size};
  // END EXERCISE
}

void reduce_scatter_mean(const Tensor& full_grads, Tensor& shard_grad,
                         parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.2: reduce-scatter the gradients, then average over the ranks
  comm.reduce_scatter(full_grads, shard_grad)->wait();
  course::scale_(shard_grad, 1.0f / static_cast<float>(comm.size()));
  // END EXERCISE
}

void all_gather_shards(const Tensor& shard_values, Tensor& full_values,
                       parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.3: every rank's updated shard into everyone's full values
  comm.all_gather(shard_values, full_values)->wait();
  // END EXERCISE
}

Tensor fsdp_forward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& x,
                    nn::Context& ctx) {
  // BEGIN EXERCISE TP4.4: gather, run the block, release
  unit.gather();
  Tensor y = block.forward(x, ctx);
  unit.release();
  return y;
  // END EXERCISE
}

Tensor fsdp_backward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& dy,
                     nn::Context& ctx) {
  // BEGIN EXERCISE TP4.5: gather again, gradients, backward, reduce-scatter, release
  unit.gather();
  unit.allocate_gradients();
  Tensor dx = block.backward(dy, ctx);
  unit.reduce_gradients(/*keep=*/false);
  unit.finish_reduction();
  unit.release();
  return dx;
  // END EXERCISE
}

Tensor tp_mapping(TpMapping mapping, bool forward, const Tensor& t, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.6: f all-reduces backward, g forward; the other direction is the identity
  const bool sum = (mapping == TpMapping::kF) != forward;
  if (!sum) return t;
  Tensor total = t.clone();
  comm.allreduce(total)->wait();
  return total;
  // END EXERCISE
}

Tensor gather_features(const Tensor& x, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.7: all-gather, then put each row's slices side by side
  const int p = comm.size();
  const int64_t n = x.size(-1), rows = x.numel() / n;
  Tensor by_rank = Tensor::empty({p, rows, n}, x.dtype(), x.device());
  comm.all_gather(x.view({rows * n}), by_rank)->wait();
  course::Shape shape = x.shape();
  shape.back() = n * p;
  return course::permute(by_rank, {1, 0, 2}).view(shape);
  // END EXERCISE
}

}  // namespace day4
