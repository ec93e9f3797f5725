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
  // BEGIN EXERCISE TP4.9: f all-reduces backward, g forward; the other direction is the identity
  const bool sum = (mapping == TpMapping::kF) != forward;
  if (!sum) return t;
  Tensor total = t.clone();
  comm.allreduce(total)->wait();
  return total;
  // END EXERCISE
}

Tensor gather_features(const Tensor& x, parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.10: all-gather, then put each row's slices side by side
  const int p = comm.size();
  const int64_t n = x.size(-1), rows = x.numel() / n;
  Tensor by_rank = Tensor::empty({p, rows, n}, x.dtype(), x.device());
  comm.all_gather(x.view({rows * n}), by_rank)->wait();
  course::Shape shape = x.shape();
  shape.back() = n * p;
  return course::permute(by_rank, {1, 0, 2}).view(shape);
  // END EXERCISE
}

Tensor vocab_parallel_embed(const Tensor& tokens, const Tensor& rows, int64_t first_token,
                            parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.11: look up the tokens in this rank's range, zeros for the others, then sum
  const int64_t n = tokens.numel(), mine = rows.size(0), channels = rows.size(1);
  const std::vector<int32_t> ids = tokens.to_vector<int32_t>();
  const std::vector<float> table = rows.to_vector<float>();
  std::vector<float> lookup(n * channels, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = ids[i] - first_token;
    if (row < 0 || row >= mine) continue;
    std::copy_n(table.begin() + row * channels, channels, lookup.begin() + i * channels);
  }
  Tensor embedded = Tensor::from_vector(lookup, {n, channels}, rows.device());
  comm.allreduce(embedded)->wait();
  return embedded;
  // END EXERCISE
}

std::vector<int64_t> qkv_rows_of_rank(int64_t channels, int rank, int ranks) {
  // BEGIN EXERCISE TP4.12: this rank's slice of q, then of k, then of v
  const int64_t per_rank = channels / ranks;
  std::vector<int64_t> rows;
  for (int64_t part = 0; part < 3; ++part) {
    for (int64_t i = 0; i < per_rank; ++i) rows.push_back(part * channels + rank * per_rank + i);
  }
  return rows;
  // END EXERCISE
}

Tensor row_parallel_linear(const Tensor& x_slice, const Tensor& weight_columns, const Tensor& bias,
                           parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.13: partial product, summed over the ranks, then the bias once
  Tensor y = course::matmul(x_slice, weight_columns, false, /*transpose_b=*/true);
  comm.allreduce(y)->wait();
  course::add_row_bias_(y, bias);
  return y;
  // END EXERCISE
}

float vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t first_class,
                                   parallel::Communicator& comm) {
  // BEGIN EXERCISE TP4.14: the global max, the global sum of exponentials, the target's logit
  const int64_t n = logits.size(0), mine = logits.size(1);
  const std::vector<float> z = logits.to_vector<float>();
  const std::vector<int64_t> y = targets.to_vector<int64_t>();
  std::vector<float> row_max(n, -INFINITY);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < mine; ++c) row_max[i] = std::max(row_max[i], z[i * mine + c]);
  }
  Tensor max = Tensor::from_vector(row_max, {n});
  comm.allreduce(max, parallel::ReduceOp::kMax)->wait();
  row_max = max.to_vector<float>();
  // Each row's sum of exponentials, then its target's logit (zero where another rank holds it).
  std::vector<float> sums(2 * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < mine; ++c) sums[i] += std::exp(z[i * mine + c] - row_max[i]);
    const int64_t target = y[i] - first_class;
    if (target >= 0 && target < mine) sums[n + i] = z[i * mine + target];
  }
  Tensor totals = Tensor::from_vector(sums, {2 * n});
  comm.allreduce(totals)->wait();
  sums = totals.to_vector<float>();
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) loss += std::log(sums[i]) + row_max[i] - sums[n + i];
  return static_cast<float>(loss / static_cast<double>(n));
  // END EXERCISE
}

parallel::GridCoordinates grid_coordinates(int world_rank, const parallel::GridShape& shape) {
  // BEGIN EXERCISE TP4.15: tp innermost, then dp, then pp
  return {.dp = (world_rank / shape.tp) % shape.dp,
          .tp = world_rank % shape.tp,
          .pp = world_rank / (shape.tp * shape.dp)};
  // END EXERCISE
}

SubGroups tensor_and_data_groups(parallel::Communicator& world, int tp) {
  // BEGIN EXERCISE TP4.16: colour by the other axis' coordinate, key by this axis'
  const int tp_rank = world.rank() % tp, dp_rank = world.rank() / tp;
  return {.tensor_parallel = world.split(dp_rank, tp_rank),
          .data_parallel = world.split(tp_rank, dp_rank)};
  // END EXERCISE
}

void average_over_replicas(const std::vector<nn::Parameter*>& parameters,
                           parallel::Communicator& data_parallel) {
  // BEGIN EXERCISE TP4.17: all-reduce each gradient over the replicas, divide by their count
  for (nn::Parameter* p : parameters) {
    data_parallel.allreduce(p->grad)->wait();
    course::scale_(p->grad, 1.0f / static_cast<float>(data_parallel.size()));
  }
  // END EXERCISE
}

DistillationLoss distillation_loss(const Tensor& student_logits, const Tensor& teacher_logits,
                                   const Tensor& labels, float temperature, float alpha) {
  // BEGIN EXERCISE TP4.19: soften both by T, weight the KL by alpha T^2 and the CE by 1 - alpha
  const auto softened = [temperature](const Tensor& logits) {
    Tensor x = course::cast(logits, course::DType::kF32);
    course::scale_(x, 1.0f / temperature);
    return x;
  };
  const Tensor targets = course::softmax_forward(softened(teacher_logits));
  const course::CrossEntropyOutput soft =
      course::soft_target_cross_entropy(softened(student_logits), targets);
  const course::CrossEntropyOutput hard = course::softmax_cross_entropy(student_logits, labels);
  double entropy = 0;  // the teacher's, per row
  for (const float p : targets.to_vector<float>()) entropy -= p > 0 ? p * std::log(p) : 0.0;
  entropy /= static_cast<double>(targets.size(0));
  DistillationLoss out;
  out.kl = soft.host_loss() - static_cast<float>(entropy);
  out.cross_entropy = hard.host_loss();
  out.loss = alpha * temperature * temperature * out.kl + (1 - alpha) * out.cross_entropy;
  // d/dz_s = (1 / T) d/d(z_s / T): the soft term's weight alpha T^2 becomes alpha T.
  out.logits_grad = course::add(
      course::soft_target_cross_entropy_backward(soft, targets, course::DType::kF32,
                                                 alpha * temperature),
      course::softmax_cross_entropy_backward(hard, labels, 0.0f, course::DType::kF32, 1 - alpha));
  return out;
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
  const int64_t row_size = weight.numel() / rows;
  const float* w = weight.data_as<float>();
  int8_t* q = out.values.data_as<int8_t>();
  float* scales = out.scales.data_as<float>();
  for (int64_t o = 0; o < rows; ++o) {
    const float* row = w + o * row_size;
    float largest = 0;
    for (int64_t i = 0; i < row_size; ++i) largest = std::max(largest, std::fabs(row[i]));
    scales[o] = largest > 0 ? largest / 127.0f : 1.0f;
    for (int64_t i = 0; i < row_size; ++i) {
      const float level = std::nearbyint(row[i] / scales[o]);
      q[o * row_size + i] = static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
    }
  }
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
  const float* w = weight.data_as<float>();
  float* m = mask.data_as<float>();
  for (int64_t start = 0; start < weight.numel(); start += 4) {
    // Element k is kept when fewer than 2 others of its group outrank it (larger magnitude, or
    // equal and earlier).
    for (int64_t k = 0; k < 4; ++k) {
      int outranked_by = 0;
      for (int64_t j = 0; j < 4; ++j) {
        const float a = std::fabs(w[start + j]), b = std::fabs(w[start + k]);
        if (a > b || (a == b && j < k)) ++outranked_by;
      }
      m[start + k] = outranked_by < 2 ? 1.0f : 0.0f;
    }
  }
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
  const float* x = values.data_as<float>();
  float* e = error.data_as<float>();
  float* out = compressed.data_as<float>();
  const int64_t n = values.numel();
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(x[i] + e[i]) * (x[i] + e[i]);
  const auto scale = static_cast<float>(std::sqrt(squares / static_cast<double>(n)));
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] + e[i];
    out[i] = v < 0.0f ? -scale : scale;
    e[i] = v - out[i];
  }
  // END EXERCISE
  return compressed;
}

}  // namespace day4
