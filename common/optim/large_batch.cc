// LARS and LAMB on top of the fused SGD and AdamW kernels: the trust ratio of each parameter
// from two norms summed on the device, then the fused update with it.
#include "common/optim/large_batch.h"

#include "common/kernels/device_factor.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/optimizer_kernels.h"

namespace course::optim {

namespace {

// Scratch of the trust ratios: the squares of every parameter's pair of norms, and the ratios.
void make_scratch(size_t parameters, Device device, Tensor& squares, Tensor& trust) {
  const auto n = static_cast<int64_t>(parameters);
  squares = Tensor::empty({2 * n}, DType::kF32, device);
  trust = Tensor::empty({n}, DType::kF32, device);
}

// trust[i] from |a|^2 and |b|^2 summed into squares[2 i], squares[2 i + 1].
Tensor trust_of(const Tensor& a, const Tensor& b, size_t i, float eta, float weight_decay,
                Tensor& squares, Tensor& trust) {
  const auto at = static_cast<int64_t>(i);
  Tensor pair = squares.slice(2 * at, 2 * at + 2);
  fill_(pair, 0.0);
  Tensor first = pair.slice(0, 1), second = pair.slice(1, 2);
  add_squares_(a, first);
  add_squares_(b, second);
  Tensor ratio = trust.slice(at, at + 1);
  trust_ratio(pair, eta, weight_decay, ratio);
  return ratio;
}

constexpr const char* kNoSkip =
    "LARS and LAMB cannot skip an overflowed step on the device (their trust ratio moves the "
    "weights after the fused update): use f16 loss scaling with sgd, adamw or lion";

Device device_of(const std::vector<std::pair<std::string, nn::Parameter*>>& params) {
  return params.empty() ? Device::cpu() : params.front().second->value.device();
}

}  // namespace

Lars::Lars(std::vector<std::pair<std::string, nn::Parameter*>> params, const LarsOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.momentum >= 0.0f && options.weight_decay >= 0.0f && options.eta > 0.0f,
               "LARS momentum and weight decay must not be negative, eta must be positive");
  momentum_ = zeros_like_params();
  for (const auto& named : params_) directions_.push_back(named.second->value.clone());
  make_scratch(params_.size(), device_of(params_), squares_, trust_);
}

std::vector<float> Lars::step_scalars() const { return sgd_step_scalars(lr_, steps_ == 0); }

void Lars::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                        UpdateTable& table) {
  COURSE_CHECK(!skip_if.defined(), kNoSkip);
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    const Tensor trust =
        trust_of(p.value, p.grad, i, options_.eta, options_.weight_decay, squares_, trust_);
    Tensor& d = directions_[i];
    copy_(d, p.grad);
    axpy_(options_.weight_decay, p.value, d);
    scale_by_(d, trust);
    slots.push_back({&p.value, &d, &momentum_[i]});
  }
  sgd_update_(table, slots, {options_.momentum, 0.0f, false}, step_scalars_);
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
  for (const auto& named : params_) moved_.push_back(named.second->value.clone());
  make_scratch(params_.size(), device_of(params_), squares_, trust_);
}

AdamWHyper Lamb::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

// The AdamW kernel's at lr 1 (the trust ratio and lr are applied afterwards), then lr.
std::vector<float> Lamb::step_scalars() const {
  std::vector<float> scalars = adamw_step_scalars(1.0f, hyper(), steps_ + 1);
  scalars.push_back(lr_);
  return scalars;
}

void Lamb::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                        UpdateTable& table) {
  COURSE_CHECK(!skip_if.defined(), kNoSkip);
  // The AdamW kernel at lr 1 moves a copy of w by exactly -r (and updates the moments).
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    copy_(moved_[i], p.value);
    slots.push_back({&moved_[i], &p.grad, &exp_avg_[i], &exp_avg_sq_[i]});
  }
  adamw_update_(table, slots, hyper(), step_scalars_.slice(0, 3));
  const Tensor lr = step_scalars_.slice(3, 4);  // read on the device: a captured step follows it
  for (size_t i : indices) {
    Tensor& w = params_[i].second->value;
    Tensor& r = moved_[i];
    axpy_(-1.0f, w, r);  // r = moved - w = -update
    step_along(w, r, trust_of(w, r, i, 1.0f, 0.0f, squares_, trust_), lr);
  }
}

void step_along(Tensor& w, Tensor& direction, const Tensor& trust, const Tensor& lr) {
  scale_by_(direction, trust);
  scale_by_(direction, lr);
  axpy_(1.0f, direction, w);
}

std::vector<std::pair<std::string, Tensor*>> Lamb::state_tensors() {
  return named_state({{".exp_avg", &exp_avg_}, {".exp_avg_sq", &exp_avg_sq_}});
}

}  // namespace course::optim
