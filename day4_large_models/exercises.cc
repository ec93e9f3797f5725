// Day 4 exercises TP4.1-TP4.5, TP4.9-TP4.17 and TP4.19-TP4.22 (the lab sheet is
// day4_large_models/README.md). solutions/day4_large_models/exercises.cc is the complete version;
// day4_large_models/ exercises.cc is generated from it by tools/labgen with every exercise replaced
// by a stub: trainees edit that one.
#include "day4_large_models/exercises.h"

#include <algorithm>
#include <cmath>

#include "common/core/exercise.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/linear.h"
#include "common/kernels/permute.h"
#include "common/kernels/soft_cross_entropy.h"
#include "common/kernels/softmax.h"

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
  // BEGIN EXERCISE TP4.9: f all-reduces backward, g forward; the other direction is the identity
  ::course::exercise_todo("TP4.9",
                          "f all-reduces backward, g forward; the other direction is the identity",
                          "day4_large_models/README.md#tp49");
  // END EXERCISE
}

Tensor gather_features(const Tensor& x, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.10: all-gather, then put each row's slices side by side
  ::course::exercise_todo("TP4.10", "all-gather, then put each row's slices side by side",
                          "day4_large_models/README.md#tp410");
  // END EXERCISE
}

Tensor vocab_parallel_embed(const Tensor& tokens, const Tensor& rows, int64_t first_token,
                            parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.11: look up the tokens in this rank's range, zeros for the others, then sum
  ::course::exercise_todo("TP4.11",
                          "look up the tokens in this rank's range, zeros for the others, then sum",
                          "day4_large_models/README.md#tp411");
  // END EXERCISE
}

std::vector<int64_t> qkv_rows_of_rank(int64_t channels, int rank, int ranks) {
  // BEGIN EXERCISE TP4.12: this rank's slice of q, then of k, then of v
  ::course::exercise_todo("TP4.12", "this rank's slice of q, then of k, then of v",
                          "day4_large_models/README.md#tp412");
  // END EXERCISE
}

Tensor row_parallel_linear(const Tensor& x_slice, const Tensor& weight_columns, const Tensor& bias,
                           parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.13: partial product, summed over the ranks, then the bias once
  ::course::exercise_todo("TP4.13", "partial product, summed over the ranks, then the bias once",
                          "day4_large_models/README.md#tp413");
  // END EXERCISE
}

float vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t first_class,
                                   parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.14: the global max, the global sum of exponentials, the target's logit
  ::course::exercise_todo("TP4.14",
                          "the global max, the global sum of exponentials, the target's logit",
                          "day4_large_models/README.md#tp414");
  // END EXERCISE
}

parallel::GridCoordinates grid_coordinates(int world_rank, const parallel::GridShape& shape) {
  // BEGIN EXERCISE TP4.15: tp innermost, then dp, then pp
  ::course::exercise_todo("TP4.15", "tp innermost, then dp, then pp",
                          "day4_large_models/README.md#tp415");
  // END EXERCISE
}

SubGroups tensor_and_data_groups(parallel::Communicator& world, int tp) {
  // BEGIN EXERCISE TP4.16: colour by the other axis' coordinate, key by this axis'
  ::course::exercise_todo("TP4.16", "colour by the other axis' coordinate, key by this axis'",
                          "day4_large_models/README.md#tp416");
  // END EXERCISE
}

void average_over_replicas(const std::vector<nn::Parameter*>& parameters,
                           parallel::Communicator& data_parallel) {
  // BEGIN EXERCISE TP4.17: all-reduce each gradient over the replicas, divide by their count
  ::course::exercise_todo("TP4.17",
                          "all-reduce each gradient over the replicas, divide by their count",
                          "day4_large_models/README.md#tp417");
  // END EXERCISE
}

DistillationLoss distillation_loss(const Tensor& student_logits, const Tensor& teacher_logits,
                                   const Tensor& labels, float temperature, float alpha) {
  // BEGIN EXERCISE TP4.19: soften both by T, weight the KL by alpha T^2 and the CE by 1 - alpha
  ::course::exercise_todo("TP4.19",
                          "soften both by T, weight the KL by alpha T^2 and the CE by 1 - alpha",
                          "day4_large_models/README.md#tp419");
  // END EXERCISE
}

QuantizedWeight quantize_per_channel(const Tensor& weight) {
  COURSE_CHECK(
      weight.dtype() == course::DType::kF32 && weight.device().is_cpu() && weight.dim() >= 2,
      "quantize_per_channel takes an f32 CPU weight (O, ...), got ", weight.str());
  const int64_t rows = weight.size(0);
  QuantizedWeight out{Tensor::empty(weight.shape(), course::DType::kI8),
                      Tensor::empty({rows}, course::DType::kF32)};
  // BEGIN EXERCISE TP4.20: one scale per output channel (row), then round to nearest even and clamp
  ::course::exercise_todo(
      "TP4.20", "one scale per output channel (row), then round to nearest even and clamp",
      "day4_large_models/README.md#tp420");
  // END EXERCISE
  return out;
}

Tensor mask_2_4(const Tensor& weight) {
  COURSE_CHECK(
      weight.dtype() == course::DType::kF32 && weight.device().is_cpu() && weight.dim() >= 2,
      "mask_2_4 takes an f32 CPU weight (O, ...), got ", weight.str());
  const int64_t rows = weight.size(0), row_size = weight.numel() / rows;
  COURSE_CHECK(row_size % 4 == 0, "2:4 sparsity needs rows of a multiple of 4 elements, got ",
               row_size, " in ", weight.str());
  Tensor mask = Tensor::empty(weight.shape(), course::DType::kF32);
  // BEGIN EXERCISE TP4.21: in each group of 4 along a row, keep the 2 largest magnitudes
  ::course::exercise_todo("TP4.21", "in each group of 4 along a row, keep the 2 largest magnitudes",
                          "day4_large_models/README.md#tp421");
  // END EXERCISE
  return mask;
}

Tensor onebit_compress(const Tensor& values, Tensor& error) {
  COURSE_CHECK(values.dtype() == course::DType::kF32 && values.device().is_cpu() &&
                   error.dtype() == course::DType::kF32 && error.device().is_cpu() &&
                   error.numel() == values.numel() && values.numel() > 0,
               "onebit_compress takes f32 CPU values and an error of their size, got ",
               values.str(), " and ", error.str());
  Tensor compressed = Tensor::empty(values.shape(), course::DType::kF32);
  // BEGIN EXERCISE TP4.22: the root mean square with each sign; the residual carried
  ::course::exercise_todo("TP4.22", "the root mean square with each sign; the residual carried",
                          "day4_large_models/README.md#tp422");
  // END EXERCISE
  return compressed;
}

}  // namespace day4
