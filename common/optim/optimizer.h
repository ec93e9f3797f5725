// Optimizers over a model's f32 parameters: SGD (momentum, Nesterov, L2 weight decay) and
// AdamW. A step updates every parameter in one fused launch of the single-source kernels of
// common/kernels/optimizer_ops.h, on the parameters' device.
//
// step() is prepare_step() (this step's learning rate and other scalars to the device),
// update() (device work only) and count_step(). A CUDA graph captures update() once and
// replays it between prepare_step() and count_step(), so the schedule still applies; a step()
// called while a graph is captured records its update() alone for that reason.
//
// step(skip_if) takes the loss scaler's found-inf flag (a (1,) f32 on the device): the fused
// update then skips itself on the device after an overflow, and the host never reads the flag.
// An optimizer whose update cannot skip itself there (!skips_on_device(): LARS's and LAMB's trust
// ratios move the weights after the fused update, the 1-bit optimizers' momentum travels between
// the ranks) has the flag read on the host instead, once per step, and its update left out after
// an overflow, as DeepSpeed's fp16 optimizer wrapper does (not inside a captured graph).
// count_step() counts attempted steps (the schedule moves on after a skipped one, as PyTorch's
// LR scheduler does); AdamW's bias correction counts them too. The 1-bit optimizers count only
// the steps they take (!counts_skipped_steps(), DeepSpeed's clock for their freeze).
//
// The optimizer in backward (optimizer_in_backward.h) updates the parameters in groups, each as
// soon as its gradients are final: set_update_groups(), then per step prepare_step(),
// update_group() once for every group in any order, count_step(). The elements are updated as
// update() updates them, one launch per group instead of one for all.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/optimizer_kernels.h"
#include "common/nn/module.h"
#include "common/tensor/pinned_staging.h"

namespace course::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter from its gradient, skipped on the device where skip_if (when
  // defined) holds a non-zero value.
  void step(const Tensor& skip_if = Tensor());
  void prepare_step();  // queues this step's scalars to the device (no host wait)
  // The update itself (device work), skipped on the device where skip_if is non-zero.
  void update(const Tensor& skip_if = Tensor()) { apply_update(skip_if, all_, update_table_); }
  // Groups of parameter indices (into the optimizer's list, each index once).
  void set_update_groups(std::vector<std::vector<size_t>> groups);
  void update_group(size_t group, const Tensor& skip_if = Tensor());
  const std::vector<std::vector<size_t>>& update_groups() const { return groups_; }
  // The parameters, named, in the optimizer's order (what the group indices count).
  const std::vector<std::pair<std::string, nn::Parameter*>>& parameters() const { return params_; }
  void count_step() { ++steps_; }
  float lr() const { return lr_; }
  void set_lr(float lr) { lr_ = lr; }
  int64_t steps() const { return steps_; }
  // Optimizer state for checkpoints, with names ("0.weight.momentum_buffer").
  virtual std::vector<std::pair<std::string, Tensor*>> state_tensors() = 0;
  // Whether this rank's state differs from the other ranks' (1-bit's error feedback): each rank
  // then checkpoints its own file.
  virtual bool keeps_rank_state() const { return false; }
  // Whether update(skip_if) skips itself on the device (step() reads the flag on the host for
  // those that cannot).
  virtual bool skips_on_device() const { return true; }
  // Whether a step skipped after an overflow still counts (the schedule moves on, as PyTorch's);
  // only a step skipped on the host can go uncounted.
  virtual bool counts_skipped_steps() const { return true; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  Optimizer(std::vector<std::pair<std::string, nn::Parameter*>> params, float lr);
  // One update of the parameters at `indices` (into params_), its fused launches through `table`
  // (kept by the caller between steps).
  virtual void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                            UpdateTable& table) = 0;
  // The scalars update() reads on the device at the current step (see optimizer_kernels.h).
  virtual std::vector<float> step_scalars() const = 0;
  // One zero tensor per parameter, shaped like it (a state slot such as a momentum buffer).
  std::vector<Tensor> zeros_like_params() const;
  // Checkpoint names of per-parameter state slots: "<parameter><suffix>" for each slot.
  using StateSlot = std::pair<const char*, std::vector<Tensor>*>;
  std::vector<std::pair<std::string, Tensor*>> named_state(const std::vector<StateSlot>& slots);

  std::vector<std::pair<std::string, nn::Parameter*>> params_;
  float lr_;
  int64_t steps_ = 0;
  Tensor step_scalars_;  // written by prepare_step(), on the parameters' device
  PinnedStaging scalar_uploads_;
  UpdateTable update_table_;  // of the fused kernel, kept between steps
  std::vector<size_t> all_;   // every index: update()'s group
  std::vector<std::vector<size_t>> groups_;
  std::vector<UpdateTable> group_tables_;  // one per group
};

struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<std::pair<std::string, nn::Parameter*>> params, const SgdOptions& options);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override;
  SgdOptions options_;
  std::vector<Tensor> momentum_;
};

struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  // Off: the moments are used as they are, without dividing by 1 - beta^t (DeepSpeed's
  // OnebitAdam, whose update is exp_avg / (sqrt(exp_avg_sq) + eps)).
  bool bias_correction = true;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<std::pair<std::string, nn::Parameter*>> params, const AdamWOptions& options);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override;
  AdamWHyper hyper() const;
  AdamWOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

}  // namespace course::optim
