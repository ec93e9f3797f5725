// The mappings' passes through the communicator's collectives.
#include "common/parallel/tensor_parallel/tp_mappings.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"
#include "common/nn/autocast.h"

namespace course::parallel {

namespace {

// The sum over the ranks in a buffer of its own (the input may be a view another layer still
// reads), in f32: MPI sums no 16-bit floats.
Tensor summed_over(const Tensor& x, Communicator& comm) {
  Tensor sum = Tensor::empty(x.shape(), DType::kF32, x.device());
  copy_(sum, nn::as_dtype(x, DType::kF32));
  if (comm.size() > 1) comm.allreduce(sum)->wait();
  return nn::as_dtype(sum, x.dtype());
}

struct LastDimShape {
  Shape shape;  // of the input, to shape the gradient
};

}  // namespace

Tensor all_gather_last_dim(const Tensor& x, Communicator& comm) {
  const int p = comm.size();
  const int64_t n = x.size(-1), rows = x.numel() / n;
  Shape gathered_shape = x.shape();
  gathered_shape.back() = n * p;
  if (p == 1) return x.view(gathered_shape);
  Tensor slices = Tensor::empty({p, rows, n}, x.dtype(), x.device());
  comm.all_gather(x.view({rows * n}), slices)->wait();
  return permute(slices, {1, 0, 2}).view(gathered_shape);
}

Tensor slice_last_dim(const Tensor& x, int rank, int size) {
  const int64_t width = x.size(-1);
  COURSE_CHECK(width % size == 0, "the last dimension of ", x.str(), " does not split into ", size,
               " equal slices");
  const int64_t n = width / size, rows = x.numel() / width;
  Shape slice_shape = x.shape();
  slice_shape.back() = n;
  const Tensor by_rank = permute(x.view({rows, size, n}), {1, 0, 2});
  const Tensor mine = by_rank.slice(rank, rank + 1);
  Tensor out = Tensor::empty(slice_shape, x.dtype(), x.device());
  copy_(out, mine.view(slice_shape));
  return out;
}

Tensor CopyToTensorParallel::run_forward(const Tensor& x, nn::Context&) { return x; }

Tensor CopyToTensorParallel::run_backward(const Tensor& dy, nn::Context&) {
  return summed_over(dy, *tp_);
}

Tensor ReduceFromTensorParallel::run_forward(const Tensor& x, nn::Context&) {
  return summed_over(x, *tp_);
}

Tensor ReduceFromTensorParallel::run_backward(const Tensor& dy, nn::Context&) { return dy; }

Tensor GatherFromTensorParallel::run_forward(const Tensor& x, nn::Context& ctx) {
  ctx.save(LastDimShape{x.shape()});
  return all_gather_last_dim(x, *tp_);
}

Tensor GatherFromTensorParallel::run_backward(const Tensor& dy, nn::Context& ctx) {
  const LastDimShape& saved = ctx.saved<LastDimShape>("GatherFromTensorParallel");
  return slice_last_dim(dy, tp_->rank(), tp_->size()).view(saved.shape);
}

}  // namespace course::parallel
