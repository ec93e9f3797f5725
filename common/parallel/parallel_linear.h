// Tensor-parallel linear layers (Megatron-LM), each cut from a whole nn::Linear that every rank
// built from the same seed, so a tensor-parallel model starts as the single-process one:
//   ColumnParallelLinear  rank r keeps output rows [r o/p, (r+1) o/p) of W and b; its input is
//                         replicated (f before it), its output this rank's slice of the
//                         features, or with gather_output all of them (an all-gather);
//   RowParallelLinear     rank r keeps input columns [r i/p, (r+1) i/p) of W and the whole b;
//                         its input is this rank's slice of the features (a column-parallel
//                         layer's output), its partial products are summed (g) and b added once.
// A column-parallel layer followed by a row-parallel one (the feed-forward block, attention's
// projections) communicates once forward and once backward.
#pragma once

#include <memory>

#include "common/nn/linear.h"
#include "common/parallel/communicator.h"
#include "common/parallel/tp_mappings.h"

namespace course::parallel {

class ColumnParallelLinear : public nn::Module {
 public:
  // Throws when the output features do not split over the ranks.
  ColumnParallelLinear(const nn::Linear& whole, std::shared_ptr<Communicator> tp,
                       bool gather_output);

  std::vector<Child> children() override;
  nn::Linear& local() { return local_; }

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  CopyToTensorParallel copy_;
  nn::Linear local_;
  GatherFromTensorParallel gather_;
  bool gather_output_;
};

class RowParallelLinear : public nn::Module {
 public:
  // Throws when the input features do not split over the ranks.
  RowParallelLinear(const nn::Linear& whole, std::shared_ptr<Communicator> tp);

  void collect(const std::string& prefix, nn::ModuleState& state) override;

  nn::Parameter weight;  // (out, in / p): this rank's columns
  nn::Parameter bias;    // (out,): whole, the same on every rank

 protected:
  Tensor run_forward(const Tensor& x, nn::Context& ctx) override;
  Tensor run_backward(const Tensor& dy, nn::Context& ctx) override;

 private:
  struct Saved {
    Tensor input;  // (rows, in / p) in the compute dtype
    Shape input_shape;
  };
  std::shared_ptr<Communicator> tp_;
};

}  // namespace course::parallel
