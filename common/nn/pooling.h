// Pooling layers: square max pooling, and global average pooling to (N, C).
#pragma once

#include "common/kernels/pooling.h"
#include "common/nn/module.h"

namespace course::nn {

class MaxPool2d : public Module {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0);
  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;

 private:
  int64_t kernel_, stride_, padding_;
  Tensor input_;
  MaxPoolResult result_;
};

class GlobalAvgPool2d : public Module {
 public:
  Tensor forward(const Tensor& x) override;  // (N, C, H, W) -> (N, C)
  Tensor backward(const Tensor& dy) override;

 private:
  Tensor input_;
};

}  // namespace course::nn
