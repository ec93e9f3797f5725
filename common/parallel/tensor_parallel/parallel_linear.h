// Tensor-parallel linear layers (Megatron-LM), each cut from a whole nn::Linear that every rank
// built from the same seed, so a tensor-parallel model starts as the single-process one (b: the
// bias, where the whole layer has one; Llama's have none):
//   ColumnParallelLinear  rank r keeps output rows [r o/p, (r+1) o/p) of W and b; its input is
//                         replicated (f before it), its output this rank's slice of the
//                         features, or with gather_output all of them (an all-gather);
//   RowParallelLinear     rank r keeps input columns [r i/p, (r+1) i/p) of W and the whole b;
//                         its input is this rank's slice of the features (a column-parallel
//                         layer's output), its partial products are summed (g) and b added once.
// A column-parallel layer followed by a row-parallel one (the feed-forward block, attention's
// projections) communicates once forward and once backward. With sequence parallelism
// (sequence_parallel.h) the column-parallel layer's input and the row-parallel layer's output
// are cut along the sequence: an all-gather before, a reduce-scatter after, instead of f and g.
#pragma once

#include <memory>
#include <optional>

#include "common/nn/linear.h"
#include "common/parallel/comm/communicator.h"
#include "common/parallel/tensor_parallel/tp_mappings.h"

namespace course::parallel {

// How the activations between tensor-parallel layers are held: whole on every rank, or cut over
// the ranks along the sequence (sequence parallelism).
enum class Activations { kReplicated, kSequenceSharded };

// What activations held as `input` pass through before rank-local work that needs them whole:
// f (CopyToTensorParallel), or the all-gather along the sequence (GatherFromSequenceParallel).
nn::ModulePtr enter_tensor_parallel(Activations input, const std::shared_ptr<Communicator>& tp);

class ColumnParallelLinear : public nn::Module {
 public:
  // Throws when the output features do not split over the ranks.
  ColumnParallelLinear(const nn::Linear& whole, std::shared_ptr<Communicator> tp,
                       bool gather_output, Activations input = Activations::kReplicated);

  std::vector<Child> children() override;
  nn::Linear& local() { return local_; }
  // Collective over the tensor-parallel ranks: `whole` (of the layer's full shape) receives
  // every rank's rows, in rank order.
  void gather_into(nn::Linear& whole);

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  std::shared_ptr<Communicator> tp_;
  nn::ModulePtr enter_;  // f, or the all-gather along the sequence
  nn::Linear local_;
  GatherFromTensorParallel gather_;
  bool gather_output_;
};

class RowParallelLinear : public nn::Module {
 public:
  // Throws when the input features do not split over the ranks. With a sequence-sharded output
  // the bias is added to this rank's positions only: its gradient is this rank's part.
  RowParallelLinear(const nn::Linear& whole, std::shared_ptr<Communicator> tp,
                    Activations output = Activations::kReplicated);

  void collect(const std::string& prefix, nn::ModuleState& state) override;
  // Collective over the tensor-parallel ranks: `whole` receives every rank's columns and the
  // bias.
  void gather_into(nn::Linear& whole);

  nn::Parameter weight;               // (out, in / p): this rank's columns
  std::optional<nn::Parameter> bias;  // (out,): whole, the same on every rank

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  struct Saved {
    Tensor input;  // (rows, in / p) in the compute dtype
    Shape input_shape;
    Tensor weight;  // forward's cast of the weight where kept (Module::kept_for_backward)
  };
  std::shared_ptr<Communicator> tp_;
  Activations output_;
};

}  // namespace course::parallel
