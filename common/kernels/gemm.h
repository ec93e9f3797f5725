// Matrix products through the vendor libraries: oneDNN on the CPU, cuBLAS on the GPU.
//
// Row-major 2-D tensors; f32, f16 and bf16 with f32 accumulation (on the CPU, f16/bf16 inputs
// are widened to f32 for sgemm and the result rounded once, as cuBLAS's 32F compute does).
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// c = alpha * op(a) @ op(b) + beta * c, with op(x) = x^T when the flag is set.
// Shapes: op(a) (M, K), op(b) (K, N), c (M, N); all of one dtype and device, except that 16-bit
// a and b may accumulate into an f32 c (one mixed-type cuBLAS call on the GPU).
void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
          float alpha = 1.0f, float beta = 0.0f);

// The same for each matrix of a batch: 3-D row-major (batch, rows, cols) tensors with equal
// batches; one strided-batched cuBLAS call on the GPU, one sgemm per matrix on the CPU.
void gemm_batched(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
                  float alpha = 1.0f, float beta = 0.0f);

// weight_grad (out, in) f32 += grad_out^T input: the weight gradient of a fully connected layer
// y = x W^T from its output gradient (rows, out) and its input (rows, in), both of one floating
// dtype (16-bit: one GEMM accumulating in f32 straight into the master gradient, as Megatron's
// gradient-accumulation fusion does, no 16-bit product rounded, cast and added).
void add_weight_gradient(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad);

// op(a) @ op(b) as a new tensor.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

}  // namespace course
