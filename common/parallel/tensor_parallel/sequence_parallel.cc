// The sequence-parallel mappings through the communicator's all-gather and reduce-scatter: the
// sequence positions of a (B, T, rest) tensor reordered to (p, B, T/p, rest), so each rank's
// positions are one contiguous block.
#include "common/parallel/tensor_parallel/sequence_parallel.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/permute.h"
#include "common/nn/autocast.h"

namespace course::parallel {

namespace {

struct SequenceSplit {
  int64_t batch, positions, rest;  // positions: T of the whole sequence
};

SequenceSplit split_of(const Tensor& x, int64_t positions, int size) {
  COURSE_CHECK(x.dim() >= 2, "a sequence-parallel tensor is (B, T, ...), got ", x.str());
  COURSE_CHECK(positions % size == 0, "a sequence of ", positions,
               " positions does not split over ", size, " tensor-parallel ranks");
  return {x.size(0), positions, x.numel() / (x.size(0) * x.size(1))};
}

Shape with_positions(const Tensor& x, int64_t positions) {
  Shape shape = x.shape();
  shape[1] = positions;
  return shape;
}

}  // namespace

Tensor all_gather_sequence(const Tensor& x, Communicator& comm) {
  const int p = comm.size();
  const SequenceSplit s = split_of(x, x.size(1) * p, p);
  if (p == 1) return x;
  const int64_t mine = s.positions / p;
  Tensor by_rank = Tensor::empty({p, s.batch, mine, s.rest}, x.dtype(), x.device());
  comm.all_gather(x.view({x.numel()}), by_rank)->wait();
  return permute(by_rank, {1, 0, 2, 3}).view(with_positions(x, s.positions));
}

Tensor reduce_scatter_sequence(const Tensor& x, Communicator& comm) {
  const int p = comm.size();
  const SequenceSplit s = split_of(x, x.size(1), p);
  const int64_t mine = s.positions / p;
  // In f32: MPI sums no 16-bit floats.
  const Tensor by_rank =
      permute(nn::as_dtype(x, DType::kF32).view({s.batch, p, mine, s.rest}), {1, 0, 2, 3});
  Tensor out = Tensor::empty(with_positions(x, mine), DType::kF32, x.device());
  if (p == 1) {
    copy_(out, by_rank.view(out.shape()));
  } else {
    comm.reduce_scatter(by_rank.view({by_rank.numel()}), out)->wait();
  }
  return nn::as_dtype(out, x.dtype());
}

Tensor slice_sequence(const Tensor& x, int rank, int size) {
  const SequenceSplit s = split_of(x, x.size(1), size);
  const int64_t mine = s.positions / size;
  const Tensor by_rank = permute(x.view({s.batch, size, mine, s.rest}), {1, 0, 2, 3});
  Tensor out = Tensor::empty(with_positions(x, mine), x.dtype(), x.device());
  copy_(out, by_rank.slice(rank, rank + 1).view(out.shape()));
  return out;
}

Tensor GatherFromSequenceParallel::run_forward(const Tensor& x, nn::Context&) {
  return all_gather_sequence(x, *tp_);
}

Tensor GatherFromSequenceParallel::run_backward(const Tensor& dy, nn::Context&) {
  return reduce_scatter_sequence(dy, *tp_);
}

Tensor ReduceScatterToSequenceParallel::run_forward(const Tensor& x, nn::Context&) {
  return reduce_scatter_sequence(x, *tp_);
}

Tensor ReduceScatterToSequenceParallel::run_backward(const Tensor& dy, nn::Context&) {
  return all_gather_sequence(dy, *tp_);
}

Tensor ScatterToSequenceParallel::run_forward(const Tensor& x, nn::Context&) {
  return slice_sequence(x, tp_->rank(), tp_->size());
}

Tensor ScatterToSequenceParallel::run_backward(const Tensor& dy, nn::Context&) {
  return all_gather_sequence(dy, *tp_);
}

}  // namespace course::parallel
