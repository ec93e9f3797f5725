// Fully connected layers' kernels: the product with its bias (and GELU) as one operation, its
// parameters' gradients as one, a bias broadcast over rows, and its gradient.
//
// On a GPU, linear_forward is one cuBLASLt product whose epilogue adds the bias (BIAS) or adds it
// and applies GELU, writing the pre-activation the backward needs beside the output
// (GELU_AUX_BIAS), as PyTorch's addmm and Megatron's fused MLP do; planned once per shape, and
// where cuBLASLt has no algorithm for a shape, the product and one pass for its epilogue run
// apart (said once). Elsewhere, the product and that one pass.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

enum class LinearEpilogue { kBias, kBiasGelu };

// y (rows, out) = x (rows, in) W^T + bias for W (out, in) of x's dtype and an f32 bias (out,);
// with kBiasGelu, y = gelu_tanh(x W^T + bias) and *pre_activation = x W^T + bias, both in x's
// dtype (pre_activation may be null for kBias).
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, LinearEpilogue epilogue,
                      Tensor* pre_activation);

// The layer's parameter gradients from dy (rows, out) and x (rows, in): weight_grad (out, in) +=
// dy^T x and, with a bias, *bias_grad (out,) f32 += dy summed over the rows. On a GPU, into f32
// gradients, one cuBLASLt product whose epilogue sums dy as the product reads it (BGRADB, as
// Transformer Engine's weight-gradient products do) into a vector then added to *bias_grad: dy is
// read once, not again by a column sum. Elsewhere, or where cuBLASLt has no algorithm (said
// once), the product and the column sums apart.
void add_linear_gradients(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad,
                          Tensor* bias_grad);

// How many products with their epilogue (forward's or the gradients') this process ran as one
// cuBLASLt call: the tests' way to see that a GPU took the fused path rather than its fallback.
int64_t cublaslt_linear_executions();

void add_row_bias_(Tensor& y, const Tensor& bias);     // y (N, C) += bias (C,) f32
void add_column_sums_(const Tensor& x, Tensor& sums);  // sums (C,) f32 += x (N, C) summed over N

namespace detail {
// The GPU's one cuBLASLt call, writing y (and pre_activation with GELU); false, having done
// nothing, when cuBLASLt has no algorithm for this shape and epilogue.
bool cublaslt_linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias,
                             LinearEpilogue epilogue, Tensor& y, Tensor* pre_activation);
// The GPU's one cuBLASLt call for add_linear_gradients, writing dy's column sums to bias_sums (f32,
// (out,)); false, having done nothing, where it does not apply (a 16-bit or unaligned weight
// gradient) or cuBLASLt has no algorithm.
bool cublaslt_linear_gradients(const Tensor& grad_out, const Tensor& input, Tensor& weight_grad,
                               Tensor& bias_sums);
}  // namespace detail

}  // namespace course
