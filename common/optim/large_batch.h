// Layer-wise adaptive optimizers for large batches: each parameter tensor's step is scaled by a
// "trust ratio" ||w|| / ||update||, so no layer moves faster than its own size allows.
//   LARS (You et al., as NVIDIA's LARC applies it to SGD): d = g + wd w,
//        trust = eta ||w|| / (||g|| + wd ||w||), buf = m buf + trust d, w -= lr buf.
//   LAMB (You et al. 2019): r = AdamW direction (bias-corrected m / (sqrt(v) + eps) + wd w),
//        trust = ||w|| / ||r||, w -= lr trust r.
// A trust ratio is 1 when either norm is 0 (fresh zero weights, or no gradient). The norms and
// ratios are computed on the parameters' device, and the learning rate read there: a step never
// waits for the host and can be captured in a graph. Every launch covers all the parameters
// (common/kernels/optimizer_kernels.h): LARS is four (the norms' chunks, their sums, the ratios,
// the update with each parameter's ratio), LAMB five (its direction first, the step last),
// whatever the number of parameters; their pointer tables are built once.
#pragma once

#include "common/optim/optimizer.h"

namespace course::optim {

struct LarsOptions {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float eta = 0.02f;  // trust coefficient (NVIDIA LARC's default)
};

class Lars : public Optimizer {
 public:
  Lars(std::vector<std::pair<std::string, nn::Parameter*>> params, const LarsOptions& options);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  bool skips_on_device() const override { return false; }  // the trust ratio moves the weights
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override;
  LarsOptions options_;
  std::vector<Tensor> momentum_;
  Tensor squares_, trust_;           // (2 P,) {|w|^2, |g|^2} per parameter, (P,) ratios
  std::vector<Tensor> trust_slots_;  // (1,) views of trust_, one per parameter
};

struct LambOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-6f;
  float weight_decay = 1e-2f;
};

class Lamb : public Optimizer {
 public:
  Lamb(std::vector<std::pair<std::string, nn::Parameter*>> params, const LambOptions& options);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  bool skips_on_device() const override { return false; }  // the trust ratio moves the weights
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;
  // (P,) on the device: each parameter's trust ratio of the last step (1-bit LAMB freezes them).
  const Tensor& trust_ratios() const { return trust_; }

 private:
  std::vector<float> step_scalars() const override;
  AdamWHyper hyper() const;
  LambOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<Tensor> directions_;   // the negated AdamW direction r, per parameter
  Tensor squares_, trust_;           // (2 P,) {|w|^2, |r|^2} per parameter, (P,) ratios
  std::vector<Tensor> trust_slots_;  // (1,) views of trust_, one per parameter
};

// The (1,) views of a (P,) tensor of per-parameter scalars, as the scalar slots of a fused
// update take them.
std::vector<Tensor> scalar_slots_of(const Tensor& scalars);

}  // namespace course::optim
