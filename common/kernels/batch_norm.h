// Batch normalisation over (N, H, W) per channel, for NCHW and NHWC activations of any
// floating dtype; statistics and parameters are f32 (C,) tensors on the same device.
//
// Synchronised batch norm (statistics over the global batch of several ranks) passes a
// ChannelSumReducer: it sums per-channel tensors over the ranks in place and returns the total
// number of elements per channel. The forward pass then normalises with the global mean and
// variance; the backward pass uses the global sums of dy and dy * xhat for dx, while the
// parameter gradients stay local (data parallelism averages them like any other).
//
// A ReLU after the normalisation (ResNet's conv-BN-ReLU) can be fused into it: the forward
// writes relu(y) in its one elementwise pass, and the backward masks dy where the normalised
// value was not positive, recomputing that value from x, the statistics, gamma and beta (the
// same float expression as the forward, so the same mask), so the ReLU saves nothing and costs
// no pass of its own either way. On a GPU cuDNN's graph runs batch norm + ReLU forward and
// batch norm inference + ReLU backward + batch norm backward, each as one fused graph.
#pragma once

#include <functional>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

using ChannelSumReducer =
    std::function<int64_t(const std::vector<Tensor*>& channel_sums, int64_t count)>;

enum class BatchNormActivation { kNone, kRelu };

struct BatchNormSaved {
  Tensor mean;        // (C,) batch mean
  Tensor invstd;      // (C,) 1 / sqrt(batch variance + eps)
  int64_t count = 0;  // elements per channel the statistics came from (all ranks)
  BatchNormActivation activation = BatchNormActivation::kNone;  // the forward's
};

// Training mode: normalises with the batch statistics (returned in `saved`) and updates the
// running statistics with `momentum` (PyTorch's convention: new = (1 - m) old + m batch);
// `activation` follows the normalisation in the same pass.
Tensor batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        Tensor& running_mean, Tensor& running_var, float momentum, float eps,
                        BatchNormSaved& saved, const ChannelSumReducer& reduce = {},
                        BatchNormActivation activation = BatchNormActivation::kNone);

// Evaluation mode: normalises with the running statistics.
Tensor batch_norm_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float eps,
                       BatchNormActivation activation = BatchNormActivation::kNone);

// Gradient of the training-mode forward (and of its activation, saved.activation): returns dx,
// adds to dgamma and dbeta. gamma and beta are the forward's.
Tensor batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& beta, const BatchNormSaved& saved, Tensor& dgamma,
                           Tensor& dbeta, const ChannelSumReducer& reduce = {});

}  // namespace course
