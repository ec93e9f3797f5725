// BatchNorm2d layer: per-channel normalisation with learnt scale and shift, batch statistics in
// training and running statistics in evaluation (momentum 0.1, eps 1e-5, as PyTorch). Built
// with BatchNormActivation::kRelu it is BatchNorm2d followed by ReLU in one pass each way
// (batch_norm.h), as ResNet's conv-BN-ReLU uses it.
//
// SyncBatchNorm: inside a SyncBatchNormScope, every BatchNorm2d in training takes its batch
// statistics over all the ranks the scope's reducer spans (common/parallel/data_parallel/ddp.h:
// sync_batch_norm); a layer's backward pass uses the reducer its forward pass used.
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
  BatchNorm2d(int64_t channels, Device device,
              BatchNormActivation activation = BatchNormActivation::kNone, float momentum = 0.1f,
              float eps = 1e-5f);

  void collect(const std::string& prefix, ModuleState& state) override;

  Parameter weight;  // gamma, (C,), ones
  Parameter bias;    // beta, (C,), zeros
  Tensor running_mean, running_var;
  float eps() const { return eps_; }
  BatchNormActivation activation() const { return activation_; }

 protected:
  Tensor run_forward(const Tensor& x, Context& ctx) override;
  Tensor run_backward(const Tensor& dy, Context& ctx) override;

 private:
  struct Saved {
    Tensor input;
    BatchNormSaved statistics;
    ChannelSumReducer reduce;  // of this call's forward (empty: local statistics)
  };
  BatchNormActivation activation_;
  float momentum_, eps_;
};

}  // namespace course::nn
