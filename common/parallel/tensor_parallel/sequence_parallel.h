// Sequence parallelism (Megatron-LM, "Reducing Activation Recomputation in Large Transformer
// Models"): between the tensor-parallel layers, the residual stream, the LayerNorms and their
// activations are cut over the tensor-parallel ranks along the sequence, (B, T/p, C) per rank,
// instead of replicated. Where tensor parallelism all-reduces, sequence parallelism
// reduce-scatters along the sequence; where it copies (f), it all-gathers along the sequence.
// The bytes moved are the same (an all-reduce is a reduce-scatter and an all-gather); the
// activations kept between the layers shrink p times.
//   GatherFromSequenceParallel       forward: all-gather along T      backward: reduce-scatter
//   ReduceScatterToSequenceParallel  forward: reduce-scatter along T  backward: all-gather
//   ScatterToSequenceParallel        forward: this rank's T/p slice   backward: all-gather
// Parameters applied to sequence slices (LayerNorms, the row-parallel biases) see only their
// rank's tokens: their gradients are summed over the tensor-parallel ranks after backward.
#pragma once

#include "common/parallel/tensor_parallel/tp_mappings.h"

namespace course::parallel {

// x (B, T/p, ...) on every rank -> (B, T, ...) with rank r's x at positions [r T/p, (r+1) T/p).
Tensor all_gather_sequence(const Tensor& x, Communicator& comm);
// x (B, T, ...) on every rank -> (B, T/p, ...): positions [r T/p, (r+1) T/p) summed over ranks.
// Throws when T does not split over the ranks.
Tensor reduce_scatter_sequence(const Tensor& x, Communicator& comm);
// Rank `rank`'s positions of x (B, T, ...): (B, T/size, ...), contiguous.
Tensor slice_sequence(const Tensor& x, int rank, int size);

class GatherFromSequenceParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

class ReduceScatterToSequenceParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

class ScatterToSequenceParallel : public TensorParallelMapping {
  using TensorParallelMapping::TensorParallelMapping;
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;
};

}  // namespace course::parallel
