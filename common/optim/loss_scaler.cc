// Dynamic loss scaling on the device.
#include "common/optim/loss_scaler.h"

#include <cmath>

#include "common/kernels/device_factor.h"
#include "common/kernels/device_factor_ops.h"
#include "common/kernels/elementwise.h"
#include "common/tensor/pinned_staging.h"

namespace course::optim {

LossScaler::LossScaler(const LossScalerOptions& options) : options_(options) {
  COURSE_CHECK(options.initial_scale > 0 && std::isfinite(options.initial_scale) &&
                   options.growth_factor > 1 && options.backoff_factor > 0 &&
                   options.backoff_factor < 1 && options.growth_interval > 0 &&
                   options.hysteresis >= 1 && options.min_scale >= 0 &&
                   options.min_scale <= options.initial_scale,
               "loss scaler needs a finite scale > 0, growth > 1, 0 < backoff < 1, interval > 0, "
               "hysteresis >= 1 and 0 <= min scale <= the initial scale");
}

void LossScaler::keep_state_on(Device home) {
  COURSE_CHECK(!state_.defined() || state_.device() == home, "the loss scaler's state was made on ",
               state_.device().str(), " before it was kept on ", home.str());
  home_ = home;
}

Tensor& LossScaler::state(Device device) {
  device = home_.value_or(device);
  if (!state_.defined()) {
    state_ = upload_to(device,
                       std::vector<float>{options_.initial_scale, 0, 0, 0,
                                          static_cast<float>(options_.hysteresis)},
                       {ops::kLossScaleSlots});
    scale_ = state_.slice(ops::kScale, ops::kScale + 1);
    found_inf_ = state_.slice(ops::kFoundInf, ops::kFoundInf + 1);
  }
  COURSE_CHECK(state_.device() == device, "the loss scaler lives on ", state_.device().str(),
               ", not ", device.str());
  return state_;
}

const Tensor& LossScaler::scale_tensor(Device device) {
  state(device);
  if (scale_.device() == device) return scale_;
  scale_copy_ = scale_.to(device);
  return scale_copy_;
}

void LossScaler::unscale_and_check(const std::vector<nn::Parameter*>& params) {
  if (params.empty()) return;
  clear_found_inf(params.front()->grad.device());
  unscale_and_mark(params);
}

void LossScaler::clear_found_inf(Device device) {
  state(device);
  fill_(found_inf_, 0.0);
}

void LossScaler::unscale_and_mark(const std::vector<nn::Parameter*>& params) {
  if (params.empty()) return;
  Tensor& s = state(params.front()->grad.device());
  for (nn::Parameter* p : params) unscale_and_mark_(p->grad, s);
}

void LossScaler::unscale(const std::vector<nn::Parameter*>& params) {
  if (params.empty()) return;
  Tensor unmarked = state(params.front()->grad.device()).clone();  // its flag written, unread
  for (nn::Parameter* p : params) unscale_and_mark_(p->grad, unmarked);
}

Tensor& LossScaler::found_inf_slot() {
  COURSE_CHECK(found_inf_.defined(), "found_inf_slot() before the first unscale_and_check()");
  return found_inf_;
}

const Tensor& LossScaler::found_inf() const {
  COURSE_CHECK(found_inf_.defined(), "found_inf() before the first unscale_and_check()");
  return found_inf_;
}

void LossScaler::update() {
  COURSE_CHECK(state_.defined(), "the loss scaler's update() before its first unscale_and_check()");
  loss_scale_update_(state_, {.growth = options_.growth_factor,
                              .backoff = options_.backoff_factor,
                              .interval = options_.growth_interval,
                              .hysteresis = options_.hysteresis,
                              .min_scale = options_.min_scale});
}

float LossScaler::scale() const {
  return state_.defined() ? scale_.to_vector<float>()[0] : options_.initial_scale;
}

int64_t LossScaler::skipped_steps() const {
  return state_.defined() ? static_cast<int64_t>(state_.to_vector<float>()[ops::kSkipped]) : 0;
}

}  // namespace course::optim
