// BatchNorm2d layer: per-channel normalisation with learnt scale and shift, batch statistics in
// training and running statistics in evaluation (momentum 0.1, eps 1e-5, as PyTorch).
//
// SyncBatchNorm: inside a SyncBatchNormScope, every BatchNorm2d in training takes its batch
// statistics over all the ranks the scope's reducer spans (common/parallel: sync_batch_norm); a
// layer's backward pass uses the reducer its forward pass used.
#pragma once

#include "common/kernels/batch_norm.h"
#include "common/nn/module.h"

namespace course::nn {

class SyncBatchNormScope {
 public:
  explicit SyncBatchNormScope(ChannelSumReducer reduce, bool enabled = true);
  ~SyncBatchNormScope();
  SyncBatchNormScope(const SyncBatchNormScope&) = delete;
  SyncBatchNormScope& operator=(const SyncBatchNormScope&) = delete;

 private:
  ChannelSumReducer previous_;
};

class BatchNorm2d : public Module {
 public:
  BatchNorm2d(int64_t channels, Device device, float momentum = 0.1f, float eps = 1e-5f);

  Tensor forward(const Tensor& x) override;
  Tensor backward(const Tensor& dy) override;
  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // gamma, (C,), ones
  Parameter bias;    // beta, (C,), zeros
  Tensor running_mean, running_var;

 private:
  float momentum_, eps_;
  Tensor input_;
  BatchNormSaved saved_;
  ChannelSumReducer reduce_;  // of the last training forward (empty: local statistics)
};

}  // namespace course::nn
