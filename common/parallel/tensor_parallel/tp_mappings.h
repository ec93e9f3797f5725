// The communication of tensor parallelism (Megatron-LM's mappings), each a pass and its
// adjoint over the ranks of a tensor-parallel communicator:
//   f  CopyToTensorParallel      forward: identity           backward: all-reduce (sum)
//   g  ReduceFromTensorParallel  forward: all-reduce (sum)   backward: identity
//      GatherFromTensorParallel  forward: all-gather of the last dimension's slices
//                                backward: this rank's slice of the gradient
// f sits where a replicated input enters rank-local work (its gradient is the sum of every
// rank's contribution), g where rank-local partial results become one replicated value.
#pragma once

#include <memory>

#include "common/nn/module.h"
#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// x (..., n) on every rank -> (..., n * size) with rank r's x at columns [r n, (r + 1) n).
Tensor all_gather_last_dim(const Tensor& x, Communicator& comm);
// Rank `rank`'s slice of the last dimension of x (..., n * size): (..., n), contiguous.
Tensor slice_last_dim(const Tensor& x, int rank, int size);

// What the mappings share: the tensor-parallel ranks they communicate over, no parameters.
class TensorParallelMapping : public nn::Module {
 public:
  explicit TensorParallelMapping(std::shared_ptr<Communicator> tp) : tp_(std::move(tp)) {}

 protected:
  std::shared_ptr<Communicator> tp_;
};

class CopyToTensorParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

class ReduceFromTensorParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

class GatherFromTensorParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

}  // namespace course::parallel
