// The dynamic loss scaler of mixed-precision training (as torch.cuda.amp.GradScaler).
//
// The loss gradient is multiplied by scale() before backward, so small f16 gradients do not
// flush to zero. Before the step, unscale_and_check() divides the gradients by the scale and
// reports whether any is NaN or infinite; update() then skips that step's optimizer update
// (the caller does), halves the scale after an overflow, and doubles it after
// `growth_interval` clean steps in a row.
#pragma once

#include <cstdint>
#include <vector>

#include "common/nn/module.h"

namespace course::optim {

struct LossScalerOptions {
  float initial_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options = {});

  float scale() const { return loss_scale_; }
  // Divides every gradient by the scale; true when all of them are finite.
  bool unscale_and_check(const std::vector<nn::Parameter*>& params);
  // Adjusts the scale after a step that `found_inf` or not.
  void update(bool found_inf);
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions options_;
  float loss_scale_;
  int64_t clean_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace course::optim
