// 2x2 average pooling with stride 2 (floor), for NCHW and NHWC activations of any floating
// dtype: the downsampling of CoAtNet's blocks (common/models/coatnet/coatnet_blocks.h).
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// (N, C, H, W) -> (N, C, H / 2, W / 2) in x's memory format; H and W at least 2.
Tensor avg_pool2_forward(const Tensor& x);
// dx of x's shape and format from dy (N, C, H / 2, W / 2).
Tensor avg_pool2_backward(const Tensor& dy, const Tensor& x);

}  // namespace course
