// 1-bit LAMB's warm-up, scalings and compressed stage as launches over all its tensors.
#include "common/parallel/data_parallel/onebit_lamb.h"

#include "common/kernels/elementwise.h"
#include "common/optim/large_batch.h"
#include "common/tensor/pinned_staging.h"

namespace course::parallel {

OneBitLamb::OneBitLamb(std::vector<std::pair<std::string, nn::Parameter*>> params,
                       const OneBitOptions& options, std::shared_ptr<Communicator> comm)
    : OneBitOptimizer(std::move(params), options, std::move(comm), Fusion::kWholeModel) {
  const OneBitLambCoefficients& c = options.lamb;
  COURSE_CHECK(c.min_coeff > 0 && c.min_coeff <= c.max_coeff && c.coeff_beta >= 0 &&
                   c.coeff_beta < 1 && c.factor_min > 0 && c.factor_min <= c.factor_max &&
                   c.factor_threshold >= 0 && c.factor_threshold < 1,
               "1-bit LAMB needs 0 < min_coeff <= max_coeff, coeff_beta in [0, 1), 0 < factor_min "
               "<= factor_max and factor_threshold in [0, 1) (--min-coeff, --max-coeff, "
               "--coeff-beta, --factor-min, --factor-max, --factor-threshold), got ",
               c.min_coeff, ", ", c.max_coeff, ", ", c.coeff_beta, ", ", c.factor_min, ", ",
               c.factor_max, ", ", c.factor_threshold);
  const Device device = momentum_.device();
  fresh_variance_ = zeros({momentum_.numel()}, DType::kF32, device);
  last_momentum_ = zeros({momentum_.numel()}, DType::kF32, device);
  fresh_of_ = slices_of(fresh_variance_);
  last_of_ = slices_of(last_momentum_);
  updates_ = zeros_like_params();
  partial_updates_ = zeros_like_params();
  ratios_ = zeros_like_params();
  std::vector<float> numels;
  for (const auto& [name, p] : params_) numels.push_back(static_cast<float>(p->value.numel()));
  const auto count = static_cast<int64_t>(params_.size());
  numels_ = upload_to(device, numels, {count});
  coeff_ = zeros({count}, DType::kF32, device);
  frozen_ = zeros({count}, DType::kF32, device);  // DeepSpeed's lamb_coeff_freeze starts at 0
  last_factor_ = zeros({count}, DType::kF32, device);
  fill_(last_factor_, 1.0);
  scaling_ = zeros({count}, DType::kF32, device);
  fill_(scaling_, 1.0);
  squares_ = zeros({2 * count}, DType::kF32, device);
  largest_ = zeros({count}, DType::kF32, device);
  coeff_slots_ = optim::scalar_slots_of(coeff_);
  scaling_slots_ = optim::scalar_slots_of(scaling_);
}

std::vector<std::pair<std::string, Tensor*>> OneBitLamb::state_tensors() {
  std::vector<std::pair<std::string, Tensor*>> state = OneBitOptimizer::state_tensors();
  const std::vector<std::pair<std::string, Tensor*>> fresh =
      named_state({{".exp_avg_sq_fresh", &fresh_of_}});
  state.insert(state.end(), fresh.begin(), fresh.end());
  state.emplace_back("onebit.lamb_coeff_freeze", &frozen_);
  state.emplace_back("onebit.last_factor", &last_factor_);
  state.emplace_back("onebit.scaling_coeff", &scaling_);
  return state;
}

void OneBitLamb::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                              UpdateTable&) {
  COURSE_CHECK(indices.size() == params_.size(),
               "1-bit optimizers update every parameter at once (their momentum travels whole): "
               "they do not run in the backward pass");
  COURSE_CHECK(!skip_if.defined(),
               "1-bit LAMB cannot skip an overflowed step on the device (its coefficients move "
               "the weights after the fused update): step(skip_if) reads the flag on the host");
  if (compressed()) {
    compressed_update();
  } else {
    warmup_update();
  }
}

void OneBitLamb::warmup_update() {
  std::vector<UpdateSlots> direction_slots;
  std::vector<const Tensor*> norms;
  std::vector<int64_t> targets;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    direction_slots.push_back(
        {&p.value, &p.grad, &momentum_of_[i], &variance_of_[i], &updates_[i]});
    norms.insert(norms.end(), {&p.value, &updates_[i]});
    targets.insert(targets.end(), {static_cast<int64_t>(2 * i), static_cast<int64_t>(2 * i + 1)});
  }
  lamb_direction_(warmup_table_, direction_slots, hyper(), step_scalars_.slice(0, 2));
  sums_of_squares_(warmup_norms_.squares, norms, targets, squares_);
  warmup_lamb_coefficients(squares_, options_.lamb, coeff_, frozen_);
  step_along_updates(step_table_);
  if (steps_ + 1 == options_.freeze_step) copy_(fresh_variance_, variance_);
}

// Each tensor's scaling from the momenta the warm-up left (DeepSpeed's scaling_coeff).
void OneBitLamb::take_scalings() {
  std::vector<const Tensor*> momenta;
  std::vector<int64_t> targets;
  for (size_t i = 0; i < params_.size(); ++i) {
    momenta.push_back(&momentum_of_[i]);
    targets.push_back(static_cast<int64_t>(i));
  }
  Tensor squares = squares_.slice(0, static_cast<int64_t>(params_.size()));
  sums_of_squares_(scalings_table_.squares, momenta, targets, squares);
  momentum_scalings(squares, numels_, scaling_);
}

void OneBitLamb::compressed_update() {
  copy_(last_momentum_, momentum_);
  if (steps_ == options_.freeze_step) take_scalings();
  std::vector<UpdateSlots> momentum_slots, direction_slots;
  std::vector<const Tensor*> norms, ratios;
  std::vector<int64_t> pair_targets, targets;
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::Parameter& p = *params_[i].second;
    momentum_slots.push_back({&momentum_of_[i], &p.grad, &scaling_slots_[i]});
    direction_slots.push_back({&p.value, &momentum_of_[i], &last_of_[i], &variance_of_[i],
                               &fresh_of_[i], &updates_[i], &partial_updates_[i], &ratios_[i],
                               &scaling_slots_[i]});
    norms.insert(norms.end(), {&updates_[i], &partial_updates_[i]});
    ratios.push_back(&ratios_[i]);
    const auto at = static_cast<int64_t>(i);
    pair_targets.insert(pair_targets.end(), {2 * at, 2 * at + 1});
    targets.push_back(at);
  }
  scaled_momentum_update_(momentum_table_, momentum_slots, options_.beta1);
  average_momentum_();
  onebit_lamb_direction_(direction_table_, direction_slots, hyper());
  sums_of_squares_(compressed_norms_.squares, norms, pair_targets, squares_);
  maxima_(ratio_table_.squares, ratios, targets, largest_);
  compressed_lamb_coefficients(squares_, largest_, frozen_, options_.weight_decay, options_.lamb,
                               last_factor_, coeff_);
  step_along_updates(step_table_);
}

// w += lr coeff r with each tensor's coefficient, r the negated update.
void OneBitLamb::step_along_updates(UpdateTable& table) {
  std::vector<UpdateSlots> slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    slots.push_back({&params_[i].second->value, &updates_[i], &coeff_slots_[i]});
  }
  trust_step_(table, slots, step_scalars_.slice(2, 3));
}

}  // namespace course::parallel
