// Per-channel operations on (N, C, H, W) activations in either memory format and any floating
// dtype: the squeeze-excitation's scaling by an (N, C) factor (CoAtNet's MBConv blocks) and a
// per-channel bias (a convolution that no batch norm follows), with their gradients.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// y = x scale[n, c]; scale (N, C) f32 on x's device.
Tensor channel_scale_forward(const Tensor& x, const Tensor& scale);
// Returns dx = dy scale[n, c]; writes scale_grad (N, C) f32 = the sum over each plane of dy x.
Tensor channel_scale_backward(const Tensor& dy, const Tensor& x, const Tensor& scale,
                              Tensor& scale_grad);

// y += bias[c]; bias (C,) f32.
void add_channel_bias_(Tensor& y, const Tensor& bias);
// bias_grad (C,) f32 += dy summed over the batch and the plane.
void add_channel_bias_grad_(const Tensor& dy, Tensor& bias_grad);

}  // namespace course
