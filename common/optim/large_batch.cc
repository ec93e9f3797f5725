// LARS and LAMB as fused launches over all their parameters: the norms summed by
// sums_of_squares_, the trust ratios of every parameter in one launch, and updates that read
// each parameter's ratio from its scalar slot (common/kernels/optimizer_ops.h).
#include "common/optim/large_batch.h"

#include "common/kernels/device_factor.h"
#include "common/kernels/optimizer_kernels.h"

namespace course::optim {

namespace {

// Scratch of the trust ratios: the squares of every parameter's pair of norms, and the ratios.
void make_scratch(size_t parameters, Device device, Tensor& squares, Tensor& trust) {
  const auto n = static_cast<int64_t>(parameters);
  squares = Tensor::empty({2 * n}, DType::kF32, device);
  trust = Tensor::empty({n}, DType::kF32, device);
}

// The norms' squares of (a_i, b_i) for the parameters i at `indices`, into squares[2 i] and
// squares[2 i + 1], then every parameter's trust ratio from its pair: three launches.
void trust_ratios_of(UpdateTable& table, const std::vector<size_t>& indices,
                     const std::vector<const Tensor*>& a, const std::vector<const Tensor*>& b,
                     float eta, float weight_decay, Tensor& squares, Tensor& trust) {
  std::vector<const Tensor*> tensors;
  std::vector<int64_t> targets;
  for (size_t k = 0; k < indices.size(); ++k) {
    const auto at = static_cast<int64_t>(indices[k]);
    tensors.insert(tensors.end(), {a[k], b[k]});
    targets.insert(targets.end(), {2 * at, 2 * at + 1});
  }
  sums_of_squares_(table.squares, tensors, targets, squares);
  trust_ratios(squares, eta, weight_decay, trust);
}

constexpr const char* kNoSkip =
    "LARS and LAMB cannot skip an overflowed step on the device (their trust ratio moves the "
    "weights after the fused update): step(skip_if) reads the flag on the host for them";

Device device_of(const std::vector<std::pair<std::string, nn::Parameter*>>& params) {
  return params.empty() ? Device::cpu() : params.front().second->value.device();
}

}  // namespace

std::vector<Tensor> scalar_slots_of(const Tensor& scalars) {
  std::vector<Tensor> slots;
  for (int64_t i = 0; i < scalars.numel(); ++i) slots.push_back(scalars.slice(i, i + 1));
  return slots;
}

Lars::Lars(std::vector<std::pair<std::string, nn::Parameter*>> params, const LarsOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.momentum >= 0.0f && options.weight_decay >= 0.0f && options.eta > 0.0f,
               "LARS momentum and weight decay must not be negative, eta must be positive");
  momentum_ = zeros_like_params();
  make_scratch(params_.size(), device_of(params_), squares_, trust_);
  trust_slots_ = scalar_slots_of(trust_);
}

std::vector<float> Lars::step_scalars() const { return sgd_step_scalars(lr_, steps_ == 0); }

void Lars::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                        UpdateTable& table) {
  COURSE_CHECK(!skip_if.defined(), kNoSkip);
  std::vector<const Tensor*> weights, gradients;
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    weights.push_back(&p.value);
    gradients.push_back(&p.grad);
    slots.push_back({&p.value, &p.grad, &momentum_[i], &trust_slots_[i]});
  }
  trust_ratios_of(table, indices, weights, gradients, options_.eta, options_.weight_decay, squares_,
                  trust_);
  lars_update_(table, slots, options_.momentum, options_.weight_decay, step_scalars_);
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
  directions_ = zeros_like_params();
  make_scratch(params_.size(), device_of(params_), squares_, trust_);
  trust_slots_ = scalar_slots_of(trust_);
}

AdamWHyper Lamb::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

// {1 - beta1^t, 1 - beta2^t, lr}: AdamW's bias corrections for the direction, lr for the step.
std::vector<float> Lamb::step_scalars() const {
  const std::vector<float> adamw = adamw_step_scalars(lr_, hyper(), steps_ + 1);
  return {adamw[1], adamw[2], lr_};
}

void Lamb::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                        UpdateTable& table) {
  COURSE_CHECK(!skip_if.defined(), kNoSkip);
  std::vector<const Tensor*> weights, directions;
  std::vector<UpdateSlots> direction_slots, step_slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    weights.push_back(&p.value);
    directions.push_back(&directions_[i]);
    direction_slots.push_back({&p.value, &p.grad, &exp_avg_[i], &exp_avg_sq_[i], &directions_[i]});
    step_slots.push_back({&p.value, &directions_[i], &trust_slots_[i]});
  }
  // Read on the device: a captured step follows the bias corrections and the learning rate.
  lamb_direction_(table, direction_slots, hyper(), step_scalars_.slice(0, 2));
  trust_ratios_of(table, indices, weights, directions, 1.0f, 0.0f, squares_, trust_);
  table.further.resize(1);
  trust_step_(table.further[0], step_slots, step_scalars_.slice(2, 3));
}

std::vector<std::pair<std::string, Tensor*>> Lamb::state_tensors() {
  return named_state({{".exp_avg", &exp_avg_}, {".exp_avg_sq", &exp_avg_sq_}});
}

}  // namespace course::optim
