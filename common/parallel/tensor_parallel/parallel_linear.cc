// Column- and row-parallel linear layers.
#include "common/parallel/tensor_parallel/parallel_linear.h"

#include <optional>

#include "common/kernels/elementwise.h"
#include "common/kernels/gemm.h"
#include "common/kernels/linear.h"
#include "common/nn/autocast.h"
#include "common/parallel/tensor_parallel/sequence_parallel.h"

namespace course::parallel {

namespace {

// Rows [r n / p, (r + 1) n / p) of a (n, ...) tensor, as a new tensor.
Tensor row_shard(const Tensor& t, int rank, int size, const char* what) {
  COURSE_CHECK(t.size(0) % size == 0, what, " of ", t.str(), " does not split over ", size,
               " tensor-parallel ranks");
  const int64_t n = t.size(0) / size;
  return t.slice(rank * n, (rank + 1) * n).clone();
}

Tensor as_rows(const Tensor& t) { return t.view({t.numel() / t.size(-1), t.size(-1)}); }

// Rank r's rows of the whole layer, with its bias if it has one.
nn::Linear rows_of(const nn::Linear& whole, int rank, int size) {
  Tensor weight = row_shard(whole.weight.value, rank, size, "a column-parallel weight");
  if (!whole.bias) return nn::Linear(std::move(weight));
  return nn::Linear(std::move(weight),
                    row_shard(whole.bias->value, rank, size, "a column-parallel bias"));
}

std::optional<nn::Parameter> bias_copy(const nn::Linear& whole) {
  if (!whole.bias) return std::nullopt;
  return nn::Parameter(whole.bias->value.clone());
}

}  // namespace

nn::ModulePtr enter_tensor_parallel(Activations input, const std::shared_ptr<Communicator>& tp) {
  if (input == Activations::kSequenceSharded) {
    return std::make_unique<GatherFromSequenceParallel>(tp);
  }
  return std::make_unique<CopyToTensorParallel>(tp);
}

ColumnParallelLinear::ColumnParallelLinear(const nn::Linear& whole,
                                           std::shared_ptr<Communicator> tp, bool gather_output,
                                           Activations input)
    : tp_(tp),
      enter_(enter_tensor_parallel(input, tp)),
      local_(rows_of(whole, tp->rank(), tp->size())),
      gather_(tp),
      gather_output_(gather_output) {}

std::vector<nn::Module::Child> ColumnParallelLinear::children() {
  return {{"", &local_}};  // the mappings hold no parameters
}

void ColumnParallelLinear::gather_into(nn::Linear& whole) {
  tp_->all_gather(local_.weight.value, whole.weight.value)->wait();
  if (local_.bias) tp_->all_gather(local_.bias->value, whole.bias->value)->wait();
}

Tensor ColumnParallelLinear::run_forward(const Tensor& x, nn::Context& ctx) {
  const Tensor y = local_.forward(enter_->forward(x, ctx.child(0)), ctx.child(1));
  return gather_output_ ? gather_.forward(y, ctx.child(2)) : y;
}

Tensor ColumnParallelLinear::run_backward(const Tensor& dy, nn::Context& ctx) {
  const Tensor local_dy = gather_output_ ? gather_.backward(dy, ctx.child(2)) : dy;
  return enter_->backward(local_.backward(local_dy, ctx.child(1)), ctx.child(0));
}

void RowParallelLinear::gather_into(nn::Linear& whole) {
  copy_(whole.weight.value, all_gather_last_dim(weight.value, *tp_));
  if (bias) copy_(whole.bias->value, bias->value);
}

RowParallelLinear::RowParallelLinear(const nn::Linear& whole, std::shared_ptr<Communicator> tp,
                                     Activations output)
    : weight(slice_last_dim(whole.weight.value, tp->rank(), tp->size())),
      bias(bias_copy(whole)),
      tp_(std::move(tp)),
      output_(output) {}

void RowParallelLinear::collect(const std::string& prefix, nn::ModuleState& state) {
  state.parameters.emplace_back(prefix + "weight", &weight);
  if (bias) state.parameters.emplace_back(prefix + "bias", &*bias);
}

Tensor RowParallelLinear::run_forward(const Tensor& x, nn::Context& ctx) {
  const int64_t in = weight.value.size(1);
  COURSE_CHECK(x.dim() >= 2 && x.size(-1) == in, "RowParallelLinear's rank ", tp_->rank(),
               " takes ", in, " input features, got ", x.str());
  const DType dtype = nn::matmul_dtype(x);
  const Tensor w = nn::as_dtype(weight.value, dtype);
  Saved saved{as_rows(nn::as_dtype(x, dtype)), x.shape(), kept_for_backward(weight, w)};
  // g: the partial products summed (in f32, as MPI sums no 16-bit floats), the bias added once;
  // with a sequence-sharded output each rank keeps the sum at its positions.
  Tensor y = nn::as_dtype(matmul(saved.input, w, false, true), DType::kF32);
  Shape out_shape = x.shape();
  out_shape.back() = weight.value.size(0);
  if (output_ == Activations::kSequenceSharded) {
    y = reduce_scatter_sequence(y.view(out_shape), *tp_);
    out_shape = y.shape();
    y = as_rows(y);
  } else if (tp_->size() > 1) {
    tp_->allreduce(y)->wait();
  }
  if (bias) add_row_bias_(y, bias->f32_value());
  ctx.save(std::move(saved));
  return nn::as_dtype(y, dtype).view(out_shape);
}

Tensor RowParallelLinear::run_backward(const Tensor& dy, nn::Context& ctx) {
  const Saved& saved = ctx.saved<Saved>("RowParallelLinear");
  if (bias) {
    add_column_sums_(as_rows(nn::as_dtype(dy, DType::kF32)), bias->grad);
    grad_ready(*bias);
  }
  // g's adjoint is the identity; the reduce-scatter's an all-gather along the sequence.
  const Tensor whole_dy =
      output_ == Activations::kSequenceSharded ? all_gather_sequence(dy, *tp_) : dy;
  const Tensor grad_out = as_rows(nn::as_dtype(whole_dy, saved.input.dtype()));
  add_weight_gradient(grad_out, saved.input, weight.grad);  // dW += dy^T x
  grad_ready(weight);
  const Tensor w =
      saved.weight.defined() ? saved.weight : nn::as_dtype(weight.value, saved.input.dtype());
  return matmul(grad_out, w).view(saved.input_shape);
}

}  // namespace course::parallel
