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
#include "common/parallel/communicator.h"

namespace course::parallel {

// x (..., n) on every rank -> (..., n * size) with rank r's x at columns [r n, (r + 1) n).
Tensor all_gather_last_dim(const Tensor& x, Communicator& comm);
// Rank `rank`'s slice of the last dimension of x (..., n * size): (..., n), contiguous.
Tensor slice_last_dim(const Tensor& x, int rank, int size);

class CopyToTensorParallel : public nn::Module {
 public:
  explicit CopyToTensorParallel(std::shared_ptr<Communicator> tp) : tp_(std::move(tp)) {}

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  std::shared_ptr<Communicator> tp_;
};

class ReduceFromTensorParallel : public nn::Module {
 public:
  explicit ReduceFromTensorParallel(std::shared_ptr<Communicator> tp) : tp_(std::move(tp)) {}

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  std::shared_ptr<Communicator> tp_;
};

class GatherFromTensorParallel : public nn::Module {
 public:
  explicit GatherFromTensorParallel(std::shared_ptr<Communicator> tp) : tp_(std::move(tp)) {}

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  std::shared_ptr<Communicator> tp_;
};

}  // namespace course::parallel
