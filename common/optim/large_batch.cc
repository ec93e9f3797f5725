// LARS and LAMB on top of the fused SGD and AdamW kernels: the trust ratio of each parameter
// needs two norms (one reduction each), then the fused update runs with it.
#include "common/optim/large_batch.h"

#include <cmath>

#include "common/kernels/elementwise.h"
#include "common/kernels/optimizer_kernels.h"
#include "common/kernels/reduce.h"

namespace course::optim {

namespace {

float trust_ratio(float numerator, float weight_norm, float denominator) {
  return weight_norm > 0.0f && denominator > 0.0f ? numerator / denominator : 1.0f;
}

}  // namespace

float l2_norm(const Tensor& x) { return std::sqrt(sum(mul(x, x))); }

Lars::Lars(std::vector<std::pair<std::string, nn::Parameter*>> params, const LarsOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.momentum >= 0.0f && options.weight_decay >= 0.0f && options.eta > 0.0f,
               "LARS momentum and weight decay must not be negative, eta must be positive");
  momentum_ = zeros_like_params();
}

std::vector<float> Lars::step_scalars() const { return sgd_step_scalars(lr_, steps_ == 0); }

void Lars::update() {
  std::vector<Tensor> directions;  // trust * (g + wd w), per parameter
  directions.reserve(params_.size());
  std::vector<UpdateSlots> slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    const float w_norm = l2_norm(p.value), g_norm = l2_norm(p.grad);
    const float trust = trust_ratio(options_.eta * w_norm, w_norm * g_norm,
                                    g_norm + options_.weight_decay * w_norm);
    Tensor d = p.grad.clone();
    axpy_(options_.weight_decay, p.value, d);
    scale_(d, trust);
    directions.push_back(std::move(d));
    slots.push_back({&p.value, &directions.back(), &momentum_[i]});
  }
  sgd_update_(update_table_, slots, {options_.momentum, 0.0f, false}, step_scalars_);
}

std::vector<std::pair<std::string, Tensor*>> Lars::state_tensors() {
  return named_state({{".momentum_buffer", &momentum_}});
}

Lamb::Lamb(std::vector<std::pair<std::string, nn::Parameter*>> params, const LambOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
               "LAMB betas must be in [0, 1)");
  exp_avg_ = zeros_like_params();
  exp_avg_sq_ = zeros_like_params();
}

AdamWHyper Lamb::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

// The AdamW kernel runs at lr 1 (the trust ratio and lr are applied afterwards).
std::vector<float> Lamb::step_scalars() const {
  return adamw_step_scalars(1.0f, hyper(), steps_ + 1);
}

void Lamb::update() {
  // The AdamW kernel at lr 1 moves a copy of w by exactly -r (and updates the moments).
  std::vector<Tensor> moved;
  moved.reserve(params_.size());
  std::vector<UpdateSlots> slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    moved.push_back(p.value.clone());
    slots.push_back({&moved.back(), &p.grad, &exp_avg_[i], &exp_avg_sq_[i]});
  }
  adamw_update_(update_table_, slots, hyper(), step_scalars_);
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& w = params_[i].second->value;
    Tensor r = moved[i];
    axpy_(-1.0f, w, r);  // r = moved - w = -update
    const float w_norm = l2_norm(w), r_norm = l2_norm(r);
    axpy_(lr_ * trust_ratio(w_norm, w_norm * r_norm, r_norm), r, w);
  }
}

std::vector<std::pair<std::string, Tensor*>> Lamb::state_tensors() {
  return named_state({{".exp_avg", &exp_avg_}, {".exp_avg_sq", &exp_avg_sq_}});
}

}  // namespace course::optim
