// Pooling: square max pooling (kernel, stride, padding) and global average pooling, for NCHW
// and NHWC activations of any floating dtype.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct MaxPoolResult {
  Tensor y;       // (N, C, OH, OW), x's memory format
  Tensor argmax;  // i32, same shape and format: the input position (ih * W + iw) of each max
};

// OH = (H + 2p - k) / s + 1; needs k > p and an output of at least 1 x 1. Floating-point or i8
// (quantized activations) x; the backward pass is floating-point only.
MaxPoolResult max_pool_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding);
Tensor max_pool_backward(const Tensor& dy, const MaxPoolResult& forward, const Tensor& x,
                         int64_t kernel, int64_t stride, int64_t padding);

// (N, C, H, W) -> (N, C) mean over H x W, and back.
Tensor global_avg_pool_forward(const Tensor& x);
Tensor global_avg_pool_backward(const Tensor& dy, const Tensor& x);

}  // namespace course
