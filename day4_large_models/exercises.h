// The day-4 exercises (TP4.1-TP4.5, TP4.9-TP4.17, TP4.19-TP4.22): what the trainee writes in
// day4_large_models/exercises.cc.
// The complete versions are in solutions/day4_large_models/exercises.cc. The lab's
// `--sharding exercise-zero1` trains through TP4.1-TP4.3; TP4.9-TP4.17 are the course's steps of
// tensor parallelism up to 2D parallelism; //day4_large_models:check tests them all on 2, 3 and
// 4 MPI ranks. TP4.19-TP4.21 are Part 7, making a trained model cheaper (distillation, int8
// quantization, 2:4 sparsity), tested by //day4_large_models:compress_check. TP4.22 is Part 9's
// 1-bit compression, tested by //day4_large_models:check.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/nn/context.h"
#include "common/nn/flat_parameters.h"
#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/comm/process_grid.h"
#include "common/parallel/data_parallel/sharded_unit.h"

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

// TP4.9: tensor parallelism's two mappings (step 1 of the course). f sits where a replicated
// input enters rank-local work: identity forward, its gradients summed over the ranks backward.
// g sits where the ranks' partial results become one replicated value: summed forward,
// identity backward. Returns what `t` becomes through `mapping` in that direction: `t` itself
// or a new tensor holding its sum over the ranks of `comm` (leave `t` as it is).
enum class TpMapping { kF, kG };
Tensor tp_mapping(TpMapping mapping, bool forward, const Tensor& t, parallel::Communicator& comm);

// TP4.10: the output of a column-parallel linear layer gathered (step 2): every rank holds
// x (..., n), its slice of the output features; returns (..., n p) with rank r's values at
// features [r n, (r + 1) n) of every row, on every rank. comm.all_gather() puts the ranks' whole
// tensors one after the other.
Tensor gather_features(const Tensor& x, parallel::Communicator& comm);

// TP4.11: the token embedding cut over the vocabulary (step 3). Rank r of `comm` holds `rows`
// (V/p, C), rows [first_token, first_token + V/p) of the table. Returns the (n, C) embedding of
// `tokens` (n,) i32 on every rank: each rank looks up the tokens in its range (the others get
// zeros), then the ranks' lookups are summed.
Tensor vocab_parallel_embed(const Tensor& tokens, const Tensor& rows, int64_t first_token,
                            parallel::Communicator& comm);

// TP4.12: attention's heads split over the ranks (step 4). The q|k|v projection's weight has 3C
// rows: q's C rows, then k's, then v's, each head h owning rows [h d, (h + 1) d) of each part
// (d = C / heads). Rank `rank` of `ranks` computes heads [r H/p, (r + 1) H/p): returns the rows
// of the weight it keeps, its q rows, then its k rows, then its v rows, in order.
std::vector<int64_t> qkv_rows_of_rank(int64_t channels, int rank, int ranks);

// TP4.13: a row-parallel linear layer (steps 5-6: after a column-parallel one, a single
// all-reduce). Every rank holds x_slice (n, i/p), its slice of the input features, the matching
// columns of the weight (o, i/p) and the whole bias (o,). Returns y = x W^T + b (n, o) on every
// rank: the ranks' partial products summed, the bias added once.
Tensor row_parallel_linear(const Tensor& x_slice, const Tensor& weight_columns, const Tensor& bias,
                           parallel::Communicator& comm);

// TP4.14: the classifier cut over the vocabulary (step 7: the column-then-row pair in every block,
// and the output layer, whose logits (B T, V) are the largest activation of a language model:
// Megatron-LM never gathers them). Rank r holds `logits` (n, V/p) f32, the logits of classes
// [first_class, first_class + V/p) of every row; `targets` (n,) i64 are classes of the whole
// vocabulary. Returns the mean over the rows of the cross-entropy -log softmax(row)[target], the
// same on every rank: each row's maximum over every rank's classes, the sum of exp(logit - max)
// over every rank's classes, and the target's logit (on the rank that holds it) each combined
// with one all-reduce.
float vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t first_class,
                                   parallel::Communicator& comm);

// TP4.15: a rank's place in the process grid (step 8). Ranks are numbered with tensor parallelism
// innermost, then data, then pipeline: world rank = tp + T (dp + D pp) for a grid of D x T x P.
parallel::GridCoordinates grid_coordinates(int world_rank, const parallel::GridShape& shape);

// TP4.16: the sub-groups of a dp x tp grid (steps 9-10): the ranks of `world` that share this
// rank's dp coordinate (its tensor-parallel group, numbered by tp) and those that share its tp
// coordinate (its data-parallel group, numbered by dp). world.split(colour, key) makes one
// communicator of the ranks that pass the same colour, ranked by key.
struct SubGroups {
  std::shared_ptr<parallel::Communicator> tensor_parallel, data_parallel;
};
SubGroups tensor_and_data_groups(parallel::Communicator& world, int tp);

// TP4.17: DDP over the data-parallel groups (step 11, 2D parallelism). Each replica's ranks
// hold different slices of the model; replicas hold the same slices. Every parameter's gradient
// becomes its average over the ranks of `data_parallel` (the replicas).
void average_over_replicas(const std::vector<nn::Parameter*>& parameters,
                           parallel::Communicator& data_parallel);

// TP4.19: knowledge distillation's loss. The student's logits z_s (N, C) learn from the
// teacher's z_t (N, C), both softened by the temperature T, and from the labels y (N,) i64:
//   L = alpha T^2 KL(softmax(z_t / T) || softmax(z_s / T)) + (1 - alpha) CE(y, z_s),
// each term a mean over the rows. The soft term's gradient shrinks as 1 / T^2 when T grows: T^2
// keeps it on the scale of the hard term's. Returns L, its two terms unweighted (the KL and the
// cross-entropy) and dL/dz_s (N, C) f32, built from the course's kernels: softmax_forward,
// soft_target_cross_entropy (against soft targets the cross-entropy is the KL plus the
// teacher's entropy, which does not depend on z_s), softmax_cross_entropy, their backward
// passes, and scale_ / add.
struct DistillationLoss {
  float loss = 0;
  float kl = 0;             // KL(softmax(z_t / T) || softmax(z_s / T))
  float cross_entropy = 0;  // CE(y, z_s)
  Tensor logits_grad;       // dL/dz_s
};
DistillationLoss distillation_loss(const Tensor& student_logits, const Tensor& teacher_logits,
                                   const Tensor& labels, float temperature, float alpha);

// TP4.20: symmetric int8 quantization of a weight with one scale per output channel. Row o of a
// weight (O, ...) f32 on the CPU (all its elements after the first axis) gets
//   scale[o] = max_i |w[o, i]| / 127   (1 for a row of zeros),
//   q[o, i]  = clamp(round(w[o, i] / scale[o]), -127, 127),
// rounding to the nearest integer, ties to even (std::nearbyint, as PyTorch's round). With one
// scale for the whole tensor, the channel of largest weights would set the step for all, and
// channels of small weights would keep only a few of the 255 levels.
struct QuantizedWeight {
  Tensor values;  // i8, the weight's shape
  Tensor scales;  // f32 (O,): w[o, i] ~ values[o, i] * scales[o]
};
QuantizedWeight quantize_per_channel(const Tensor& weight);

// TP4.21: the 2:4 sparsity mask of a weight (O, ...) f32 on the CPU, whose rows (all elements
// after the first axis: the input dimension, the one a GEMM sums over) have a multiple of 4
// elements. In every group of 4 consecutive elements of a row the 2 of largest magnitude are
// kept (1) and the other 2 zeroed (0); of equal magnitudes the earlier is kept. Returns the mask,
// f32, of the weight's shape. The GPU's sparse tensor cores skip the zeros of this pattern.
Tensor mask_2_4(const Tensor& weight);

// TP4.22: 1-bit compression with error feedback, what 1-bit Adam and 1-bit LAMB send of each
// momentum tensor (Part 9), as DeepSpeed's compressed all-reduce does it. `values` (n,) f32 on
// the CPU plus `error` (n,), the residual the last call left, become, with v = values + error,
//   scale = the root mean square of v: sqrt((v[0]^2 + ... + v[n-1]^2) / n),
//   compressed[i] = -scale where v[i] < 0, else +scale,
// one sign bit per element and one scale per tensor on the wire. Returns the compressed values
// (what the receiver rebuilds) and leaves in `error` what compression lost, v - compressed, which
// the next call adds back: over steps, nothing is lost for good.
Tensor onebit_compress(const Tensor& values, Tensor& error);

}  // namespace day4
