// Pooling layers: square max pooling, 2x2 average pooling of stride 2 (CoAtNet's shortcuts), and
// global average pooling to (N, C).
#pragma once

#include "common/kernels/pooling.h"
#include "common/nn/module.h"

namespace course::nn {

class MaxPool2d : public Module {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0);

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Tensor input;
    MaxPoolResult result;
  };
  int64_t kernel_, stride_, padding_;
};

// (N, C, H, W) -> (N, C, H / 2, W / 2), the mean of each 2x2 window.
class AvgPool2d : public Module {
 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
};

// (N, C, H, W) -> (N, C)
class GlobalAvgPool2d : public Module {
 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;
};

}  // namespace course::nn
