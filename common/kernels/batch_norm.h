// Batch normalisation over (N, H, W) per channel, for NCHW and NHWC activations of any
// floating dtype; statistics and parameters are f32 (C,) tensors on the same device.
//
// Synchronised batch norm (statistics over the global batch of several ranks) passes a
// ChannelSumReducer: it sums per-channel tensors over the ranks in place and returns the total
// number of elements per channel. The forward pass then normalises with the global mean and
// variance; the backward pass uses the global sums of dy and dy * xhat for dx, while the
// parameter gradients stay local (data parallelism averages them like any other).
#pragma once

#include <functional>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

using ChannelSumReducer =
    std::function<int64_t(const std::vector<Tensor*>& channel_sums, int64_t count)>;

struct BatchNormSaved {
  Tensor mean;        // (C,) batch mean
  Tensor invstd;      // (C,) 1 / sqrt(batch variance + eps)
  int64_t count = 0;  // elements per channel the statistics came from (all ranks)
};

// Training mode: normalises with the batch statistics (returned in `saved`) and updates the
// running statistics with `momentum` (PyTorch's convention: new = (1 - m) old + m batch).
Tensor batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        BatchNormSaved& saved, const ChannelSumReducer& reduce = {});

// Evaluation mode: normalises with the running statistics.
Tensor batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float eps);

// Gradient of the training-mode forward: returns dx, adds to dgamma and dbeta.
Tensor batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const BatchNormSaved& saved, Tensor& dgamma, Tensor& dbeta,
                           const ChannelSumReducer& reduce = {});

}  // namespace course
