// Linear layer: y = x W^T + b, x (N, in), W (out, in), b (out,).
#pragma once

#include <random>

#include "common/nn/module.h"

namespace course::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, std::mt19937& rng, Device device);

  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;
  Parameter bias;

 private:
  Tensor input_;
  Tensor compute_weight_;
};

}  // namespace course::nn
