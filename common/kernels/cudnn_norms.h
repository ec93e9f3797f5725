// Normalisations on the GPU through cuDNN's graph API: its layernorm, batchnorm (with a ReLU
// fused after it) and their backward operations (the graph's norm operations; the legacy
// cudnnNormalization and cudnnBatchNormalization calls are deprecated), planned once per shape
// (cudnn_graph.h). The statistics are the course's (layer_norm.h, batch_norm.h): f32 means and
// reciprocal standard deviations 1 / sqrt(var + eps), so either path's backward takes either path's
// forward. Activations of any floating dtype (batch norm's in either memory format); the
// parameters, their gradients and the running statistics f32. Each call returns false when it did
// not run (not a GPU, switched off, or no engine for the shape: said once), and the caller then
// runs the course's kernels.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// LayerNorm over the last dimension of x: y (like x), mean and rstd (rows,) made and written.
bool cudnn_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                              Tensor& y, Tensor& mean, Tensor& rstd);

// dx (like x) and the parameters' gradients dweight, dbias (C,) made and written (not added).
bool cudnn_layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dweight,
                               Tensor& dbias);

// What batch norm's training forward makes: y (like x), the batch's mean and invstd (C,), and
// the running statistics moved by `momentum` (PyTorch's convention) towards the batch's. cuDNN
// writes the moved statistics apart from the ones it read (its graph has no in-place tensors):
// the caller takes them back into its running statistics, both in one launch.
struct BatchNormForward {
  Tensor y, mean, invstd;
  Tensor next_running_mean, next_running_var;
};

// Batch norm of a 4-D x in training mode, relu(y) with `relu` (one fused graph).
bool cudnn_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                              const Tensor& running_mean, const Tensor& running_var, float momentum,
                              float eps, bool relu, BatchNormForward& out);

// dx (like x) and dgamma, dbeta (C,) made and written (not added). With `relu` the forward's
// ReLU too: its input recomputed by batch norm inference on the saved statistics, ReLU's backward
// and batch norm's in one graph (beta is read only then).
bool cudnn_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& mean, const Tensor& invstd,
                               bool relu, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// On by default; off, the normalisations run the course's kernels (the tests compare the two).
void set_cudnn_norms(bool enabled);
bool cudnn_norms_enabled();

}  // namespace course
