// 2-D convolution through the vendor libraries: oneDNN on the CPU, cuDNN on the GPU.
//
// Activations are (N, C, H, W) in either memory format (the output keeps the input's);
// weights are (O, C / G, K, K) for G groups, contiguous or in the activations' memory format (G =
// C: a depthwise convolution, as in MBConv blocks); square kernels, equal stride and padding on
// both axes, no bias (a batch norm follows every convolution in the course's networks). f16/bf16
// run in the library's reduced precision on the GPU and through f32 on the CPU.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct Conv2dShape {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t groups = 1;  // input and output channels cut into this many independent convolutions
};

// The (N, O, OH, OW) shape of the output; throws when the input is too small or channels differ.
Shape conv2d_output_shape(const Shape& x, const Shape& w, Conv2dShape conv);

// The memory format a convolution of `x` reads its weights in without a copy of its own: on an
// accelerator the activations' (cuDNN's NHWC kernels take NHWC (KRSC) filters; the simulated
// accelerator follows, so the CPU's tests run that path), on the CPU the contiguous one (oneDNN
// reorders weights into its own blocked layout whatever they come in).
MemoryFormat conv2d_weight_format(const Tensor& x);

Tensor conv2d_forward(const Tensor& x, const Tensor& w, Conv2dShape conv);
// dx for dy = conv(x, w), with x's shape and memory format.
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& x, Conv2dShape conv);
// dw += gradient of the weights: dw in x's dtype, or f32 for 16-bit x (mixed precision: the
// gradient in x's dtype added to the f32 master gradient in the same pass, on a GPU with no zero
// fill, relayout or cast apart).
void conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw, Conv2dShape conv);

namespace detail {
// Whether activations are NHWC in memory: the back ends' one question about the layout.
inline bool is_channels_last(const Tensor& t) {
  return t.memory_format() == MemoryFormat::kChannelsLast;
}

// Library back ends, one per device kind.
void onednn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv);
void onednn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv);
void onednn_conv2d_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dw,
                                    Conv2dShape conv);
// The CPU's f32 weight gradient as one matrix product over the output positions, and whether
// it beats oneDNN's direct kernel for dy's (N, O, OH, OW) shape (conv2d_gemm_weights.cc).
bool gemm_weight_gradient_pays(const Shape& dy, Conv2dShape conv);
void gemm_conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw,
                                      Conv2dShape conv);
void cudnn_conv2d_forward(const Tensor& x, const Tensor& w, Tensor& y, Conv2dShape conv);
void cudnn_conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, Conv2dShape conv);
void cudnn_conv2d_backward_weights_add(const Tensor& dy, const Tensor& x, Tensor& dw,
                                       Conv2dShape conv);
}  // namespace detail

}  // namespace course
