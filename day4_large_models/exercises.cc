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
  ::course::exercise_todo("TP4.1", "equal shards of the buffer padded to a multiple of the ranks",
                          "day4_large_models/README.md#tp41");
  // END EXERCISE
}

void reduce_scatter_mean(const Tensor& full_grads, Tensor& shard_grad,
                         parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.2: reduce-scatter the gradients, then average over the ranks
  ::course::exercise_todo("TP4.2", "reduce-scatter the gradients, then average over the ranks",
                          "day4_large_models/README.md#tp42");
  // END EXERCISE
}

void all_gather_shards(const Tensor& shard_values, Tensor& full_values,
                       parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.3: every rank's updated shard into everyone's full values
  ::course::exercise_todo("TP4.3", "every rank's updated shard into everyone's full values",
                          "day4_large_models/README.md#tp43");
  // END EXERCISE
}

Tensor fsdp_forward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& x,
                    nn::Context& ctx) {
  // BEGIN EXERCISE TP4.4: gather, run the block, release
  ::course::exercise_todo("TP4.4", "gather, run the block, release",
                          "day4_large_models/README.md#tp44");
  // END EXERCISE
}

Tensor fsdp_backward(parallel::ShardedUnit& unit, nn::Module& block, const Tensor& dy,
                     nn::Context& ctx) {
  // BEGIN EXERCISE TP4.5: gather again, gradients, backward, reduce-scatter, release
  ::course::exercise_todo("TP4.5", "gather again, gradients, backward, reduce-scatter, release",
                          "day4_large_models/README.md#tp45");
  // END EXERCISE
}

Tensor tp_mapping(TpMapping mapping, bool forward, const Tensor& t, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.6: f all-reduces backward, g forward; the other direction is the identity
  ::course::exercise_todo("TP4.6",
                          "f all-reduces backward, g forward; the other direction is the identity",
                          "day4_large_models/README.md#tp46");
  // END EXERCISE
}

Tensor gather_features(const Tensor& x, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.7: all-gather, then put each row's slices side by side
  ::course::exercise_todo("TP4.7", "all-gather, then put each row's slices side by side",
                          "day4_large_models/README.md#tp47");
  // END EXERCISE
}

}  // namespace day4
