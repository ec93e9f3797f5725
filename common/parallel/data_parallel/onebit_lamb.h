// 1-bit LAMB as DeepSpeed's OnebitLamb computes it (runtime/fp16/onebit/lamb.py; Li et al.
// 2021), on top of the shared 1-bit machinery (onebit_optimizer.h):
//   warm-up: LAMB without bias correction, u = m / (sqrt(v) + eps) + wd w, each tensor's
//     coefficient |w| / |u| clamped to [min_coeff, max_coeff], and an average of the
//     coefficients, frozen = coeff_beta frozen + (1 - coeff_beta) c, taken while it trains; the
//     last warm-up step copies the variance into a fresh one;
//   first compressed step: each tensor's momentum scaling, the mean of the tensors' root mean
//     squares over its own, so that the whole model compresses as one buffer (one scale) without
//     the small tensors drowning;
//   compressed steps: m = (beta1 m + (1 - beta1) g) x scaling, the whole model's momentum averaged
//     by the compressed all-reduce, the scaling undone and the mask applied; the gradient rebuilt
//     from the momentum's change into the fresh variance; the update from the frozen variance, at
//     frozen x a factor: the largest ratio of the frozen denominator to the fresh one, blended by
//     the decay's share, clamped to [factor_min, factor_max] and to within factor_threshold of
//     the last step's.
// Every norm, maximum and coefficient stays on the device (one launch each over all tensors): a
// step never waits for the host. The coefficients, factors, scalings and fresh variance are
// checkpointed with the moments and errors.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/parallel/data_parallel/onebit_optimizer.h"

namespace course::parallel {

class OneBitLamb : public OneBitOptimizer {
 public:
  // The momentum is averaged over the ranks of `comm` (data parallelism's).
  OneBitLamb(std::vector<std::pair<std::string, nn::Parameter*>> params,
             const OneBitOptions& options, std::shared_ptr<Communicator> comm);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  // {1, 1, lr}: no bias correction for the warm-up's direction, the rate for the step.
  std::vector<float> step_scalars() const override { return {1.0f, 1.0f, lr_}; }
  void warmup_update();
  void take_scalings();
  void compressed_update();
  void step_along_updates(UpdateTable& table);

  Tensor fresh_variance_, last_momentum_;                   // flat, as momentum_
  std::vector<Tensor> fresh_of_, last_of_;                  // their slices
  std::vector<Tensor> updates_, partial_updates_, ratios_;  // scratch, per parameter
  Tensor numels_;                                           // (P,) f32 element counts
  Tensor coeff_, frozen_, last_factor_, scaling_;           // (P,) each
  Tensor squares_, largest_;                                // (2 P,) and (P,) scratch
  std::vector<Tensor> coeff_slots_, scaling_slots_;         // (1,) views
  // One table per launch over its own tensors (a table rebuilds when its pointers change).
  UpdateTable warmup_table_, warmup_norms_, step_table_, scalings_table_, momentum_table_,
      direction_table_, compressed_norms_, ratio_table_;
};

}  // namespace course::parallel
