// LayerNorm on the GPU through cuDNN's graph API: its layernorm and layernorm-backward
// operations (the graph's norm operations; the legacy cudnnNormalization calls are deprecated),
// planned once per shape (cudnn_graph.h). The statistics are the course's (layer_norm.h): each
// row's mean and reciprocal standard deviation 1 / sqrt(var + eps), f32, so either path's
// backward takes either path's forward. Rows of C values of any floating dtype; the weight, the
// bias and their gradients f32.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// y (like x) and mean, rstd (rows,) f32 made and written, true returned; false when it did not
// run (not a GPU, switched off, or no engine for the shape: said once), and the caller runs the
// course's kernels.
bool cudnn_layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                              Tensor& y, Tensor& mean, Tensor& rstd);

// dx (like x) and the parameters' gradients dweight, dbias (C,) f32 made and written (not
// added), true returned; false as above.
bool cudnn_layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dweight,
                               Tensor& dbias);

// On by default; off, LayerNorm runs the course's kernels (the tests compare the two).
void set_cudnn_layer_norm(bool enabled);
bool cudnn_layer_norm_enabled();

}  // namespace course
