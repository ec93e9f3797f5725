// Dynamic loss scaling.
#include "common/optim/loss_scaler.h"

#include "common/kernels/elementwise.h"
#include "common/kernels/reduce.h"

namespace course::optim {

LossScaler::LossScaler(const LossScalerOptions& options)
    : options_(options), loss_scale_(options.initial_scale) {
  COURSE_CHECK(options.initial_scale > 0 && options.growth_factor > 1 &&
                   options.backoff_factor > 0 && options.backoff_factor < 1 &&
                   options.growth_interval > 0,
               "loss scaler needs scale > 0, growth > 1, 0 < backoff < 1, interval > 0");
}

bool LossScaler::unscale_and_check(const std::vector<nn::Parameter*>& params) {
  std::vector<Tensor> grads;
  for (nn::Parameter* p : params) {
    scale_(p->grad, 1.0f / loss_scale_);
    grads.push_back(p->grad);
  }
  return all_finite(grads);  // one host wait per step, whatever the number of parameters
}

void LossScaler::update(bool found_inf) {
  if (found_inf) {
    loss_scale_ *= options_.backoff_factor;
    clean_steps_ = 0;
    ++skipped_;
    return;
  }
  if (++clean_steps_ == options_.growth_interval) {
    loss_scale_ *= options_.growth_factor;
    clean_steps_ = 0;
  }
}

}  // namespace course::optim
