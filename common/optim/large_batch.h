// Layer-wise adaptive optimizers for large batches: each parameter tensor's step is scaled by a
// "trust ratio" ||w|| / ||update||, so no layer moves faster than its own size allows.
//   LARS (You et al., as NVIDIA's LARC applies it to SGD): d = g + wd w,
//        trust = eta ||w|| / (||g|| + wd ||w||), buf = m buf + trust d, w -= lr buf.
//   LAMB (You et al. 2019): r = AdamW direction (bias-corrected m / (sqrt(v) + eps) + wd w),
//        trust = ||w|| / ||r||, w -= lr trust r.
// A trust ratio is 1 when either norm is 0 (fresh zero weights, or no gradient). The norms and
// ratios are computed on the parameters' device (common/kernels/device_factor.h), and the
// learning rate read there: a step never waits for the host and can be captured in a graph; the
// scratch directions are kept between steps, so the fused update's pointer table is built once.
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
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override;
  LarsOptions options_;
  std::vector<Tensor> momentum_;
  std::vector<Tensor> directions_;  // trust (g + wd w), per parameter
  Tensor squares_, trust_;          // (2 P,) {|w|^2, |g|^2} per parameter, (P,) ratios
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
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;
  // (P,) on the device: each parameter's trust ratio of the last step (1-bit LAMB freezes them).
  const Tensor& trust_ratios() const { return trust_; }

 private:
  std::vector<float> step_scalars() const override;
  AdamWHyper hyper() const;
  LambOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::vector<Tensor> moved_;  // w moved by the AdamW direction, then the direction itself
  Tensor squares_, trust_;     // (2 P,) {|w|^2, |r|^2} per parameter, (P,) ratios
};

// LAMB's last move: w += lr trust direction, where direction is the negated AdamW update at lr 1
// (overwritten) and trust and lr are (1,) tensors on the device.
void step_along(Tensor& w, Tensor& direction, const Tensor& trust, const Tensor& lr);

}  // namespace course::optim
