// Linear layer: y = x W^T + b, x (..., in) (e.g. (N, in) or (B, T, in)), W (out, in), b (out,);
// or y = x W^T without a bias (Llama's projections); or y = gelu(x W^T + b), the GELU fused into
// the product's epilogue (the MLP expansion of GPT-2 and the encoders: one cuBLASLt call on a
// GPU, where a Linear and a GELU layer take a product and two passes over the output).
#pragma once

#include <optional>
#include <random>

#include "common/kernels/linear.h"
#include "common/nn/module.h"

namespace course::nn {

class Linear : public Module {
 public:
  // PyTorch's default initialisation.
  Linear(int64_t in_features, int64_t out_features, std::mt19937& rng, Device device);
  // Given initial values: weight (out, in), bias (out,), f32; the bias's epilogue, with or
  // without GELU after it.
  Linear(Tensor weight, Tensor bias, LinearEpilogue epilogue = LinearEpilogue::kBias);
  // Given an initial weight (out, in) f32: no bias.
  explicit Linear(Tensor weight);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;
  std::optional<Parameter> bias;

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Tensor input;           // (rows, in) in the compute dtype
    Shape input_shape;      // as given, to shape dx
    Tensor pre_activation;  // (rows, out), GELU's input, with GELU fused
    Tensor weight;          // forward's cast of the weight where kept (Module::kept_for_backward)
  };
  LinearEpilogue epilogue_ = LinearEpilogue::kBias;
};

}  // namespace course::nn
