// The single-source kernels of int8 inference (bodies in quantize.cu): activations quantized
// per tensor, a signed input split into unsigned halves, the epilogue of an integer GEMM, and the
// im2col that makes a convolution a GEMM (the GPU's int8 convolution, common/kernels/fused_conv.h).
#pragma once

#include "common/kernels/conv2d.h"
#include "common/tensor/tensor.h"

namespace course {

// i8 of x's shape and memory format: clamp(round(x / scale), -127, 127), ties to even; x f32.
Tensor quantize_symmetric(const Tensor& x, float scale);

// x (i8) = positive - negative, two u8 tensors of x's shape and memory format with values in
// [0, 128]: what an integer kernel that takes only unsigned inputs needs of a signed one.
struct SignedSplit {
  Tensor positive, negative;
};
SignedSplit split_signed(const Tensor& x);

// (rows, O) f32: (acc[r, o] - minus[r, o]) * scales[o] + bias[o], ReLU'd with relu. acc is
// (rows, P >= O), i32 or f32, of which the first O columns count; minus, if defined, is like
// acc; scales and bias f32 (O,).
Tensor scale_bias_activation(const Tensor& acc, int64_t channels, const Tensor& scales,
                             const Tensor& bias, bool relu, const Tensor& minus = Tensor());

// (N OH OW, columns) i8: the receptive fields of a channels-last i8 input (N, C, H, W) for a
// square kernel, columns >= K K C (the rest zero, for GEMMs that want aligned rows).
Tensor im2col_nhwc(const Tensor& x, int64_t kernel, Conv2dShape conv, int64_t columns);

}  // namespace course
