// Batch normalisation over (N, H, W) per channel, for NCHW and NHWC activations of any
// floating dtype; statistics and parameters are f32 (C,) tensors on the same device.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct BatchNormSaved {
  Tensor mean;    // (C,) batch mean
  Tensor invstd;  // (C,) 1 / sqrt(batch variance + eps)
};

// Training mode: normalises with the batch statistics (returned in `saved`) and updates the
// running statistics with `momentum` (PyTorch's convention: new = (1 - m) old + m batch).
Tensor batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        BatchNormSaved& saved);

// Evaluation mode: normalises with the running statistics.
Tensor batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float eps);

// Gradient of the training-mode forward: returns dx, adds to dgamma and dbeta.
Tensor batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const BatchNormSaved& saved, Tensor& dgamma, Tensor& dbeta);

}  // namespace course
