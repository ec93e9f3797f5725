// Linear layer: y = x W^T + b, x (..., in) (e.g. (N, in) or (B, T, in)), W (out, in), b (out,);
// or y = x W^T without a bias (Llama's projections).
#pragma once

#include <optional>
#include <random>

#include "common/nn/module.h"

namespace course::nn {

class Linear : public Module {
 public:
  // PyTorch's default initialisation.
  Linear(int64_t in_features, int64_t out_features, std::mt19937& rng, Device device);
  // Given initial values: weight (out, in), bias (out,), f32.
  Linear(Tensor weight, Tensor bias);
  // Given an initial weight (out, in) f32: no bias.
  explicit Linear(Tensor weight);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;
  std::optional<Parameter> bias;

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  // The weight is not saved: backward reads the parameter again, so sharded data parallelism
  // can free the gathered weight between forward and backward (it gathers it again).
  struct Saved {
    Tensor input;       // (rows, in) in the compute dtype
    Shape input_shape;  // as given, to shape dx
  };
};

}  // namespace course::nn
