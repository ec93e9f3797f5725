// Layers that see transformer tokens (N, h w, C) as the h x w grid of a feature map they came
// from (the channels-last (N, C, h, w) they are in memory), for CoAtNet's transformer stages:
//   TokenPool2   2x2 average pooling of the grid (floor), (N, h w, C) -> (N, h/2 w/2, C);
//   TokenMean    the mean over all tokens, (N, T, C) -> (N, C), before the head.
#pragma once

#include "common/nn/module.h"

namespace course::nn {

class TokenPool2 : public Module {
 public:
  TokenPool2(int64_t h, int64_t w);

 protected:
  Tensor run_forward(const Tensor& tokens, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  int64_t h_, w_;
};

class TokenMean : public Module {
 protected:
  Tensor run_forward(const Tensor& tokens, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
};

}  // namespace course::nn
