// SGD and AdamW.
#include "common/optim/optimizer.h"

#include <algorithm>

#include "common/kernels/elementwise.h"

namespace course::optim {

Optimizer::Optimizer(std::vector<std::pair<std::string, nn::Parameter*>> params, float lr)
    : params_(std::move(params)), lr_(lr) {
  COURSE_CHECK(lr >= 0.0f, "learning rate must not be negative, got ", lr);
  for (size_t i = 0; i < params_.size(); ++i) all_.push_back(i);
}

void Optimizer::set_update_groups(std::vector<std::vector<size_t>> groups) {
  std::vector<int> seen(params_.size(), 0);
  for (const std::vector<size_t>& group : groups) {
    for (size_t i : group) {
      COURSE_CHECK(i < params_.size() && seen[i]++ == 0, "update groups must name each of the ",
                   params_.size(), " parameters once; ", i, " is out of range or repeated");
    }
  }
  COURSE_CHECK(std::find(seen.begin(), seen.end(), 0) == seen.end(),
               "update groups must name every parameter");
  groups_ = std::move(groups);
  group_tables_.assign(groups_.size(), UpdateTable{});
}

void Optimizer::update_group(size_t group, const Tensor& skip_if) {
  COURSE_CHECK(group < groups_.size(), "update group ", group, " of ", groups_.size());
  apply_update(skip_if, groups_[group], group_tables_[group]);
}

void Optimizer::step(const Tensor& skip_if) {
  const bool recorded = capturing();  // the replay's caller prepares and counts (step_graph.h)
  if (!recorded) prepare_step();
  bool taken = true;
  if (!skip_if.defined() || skips_on_device()) {
    update(skip_if);
  } else {
    COURSE_CHECK(!recorded, "this optimizer reads the overflow flag on the host to skip a step: ",
                 "a captured graph cannot");
    taken = skip_if.to_vector<float>()[0] == 0;  // the host waits for the flag
    if (taken) update();
  }
  if (!recorded && (taken || counts_skipped_steps())) count_step();
}

void Optimizer::prepare_step() {
  const std::vector<float> scalars = step_scalars();
  const Device device = params_.empty() ? Device::cpu() : params_.front().second->value.device();
  const Shape shape{static_cast<int64_t>(scalars.size())};
  if (!step_scalars_.defined() || step_scalars_.shape() != shape) {
    step_scalars_ = Tensor::empty(shape, DType::kF32, device);
  }
  scalar_uploads_.upload(scalars, step_scalars_);
}

std::vector<Tensor> Optimizer::zeros_like_params() const {
  std::vector<Tensor> out;
  for (const auto& [name, p] : params_) {
    out.push_back(zeros(p->value.shape(), DType::kF32, p->value.device()));
  }
  return out;
}

std::vector<std::pair<std::string, Tensor*>> Optimizer::named_state(
    const std::vector<StateSlot>& slots) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (const auto& [suffix, tensors] : slots) {
      out.emplace_back(params_[i].first + suffix, &(*tensors)[i]);
    }
  }
  return out;
}

Sgd::Sgd(std::vector<std::pair<std::string, nn::Parameter*>> params, const SgdOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.momentum >= 0.0f && options.weight_decay >= 0.0f,
               "SGD momentum and weight decay must not be negative");
  COURSE_CHECK(!options.nesterov || options.momentum > 0.0f, "Nesterov SGD needs momentum > 0");
  momentum_ = zeros_like_params();
}

std::vector<float> Sgd::step_scalars() const { return sgd_step_scalars(lr_, steps_ == 0); }

void Sgd::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                       UpdateTable& table) {
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    slots.push_back({&p.value, &p.grad, &momentum_[i]});
  }
  sgd_update_(table, slots, {options_.momentum, options_.weight_decay, options_.nesterov},
              step_scalars_, skip_if);
}

std::vector<std::pair<std::string, Tensor*>> Sgd::state_tensors() {
  return named_state({{".momentum_buffer", &momentum_}});
}

AdamW::AdamW(std::vector<std::pair<std::string, nn::Parameter*>> params,
             const AdamWOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
               "AdamW betas must be in [0, 1)");
  exp_avg_ = zeros_like_params();
  exp_avg_sq_ = zeros_like_params();
}

AdamWHyper AdamW::hyper() const {
  return {options_.beta1, options_.beta2, options_.eps, options_.weight_decay};
}

std::vector<float> AdamW::step_scalars() const {
  std::vector<float> scalars = adamw_step_scalars(lr_, hyper(), steps_ + 1);
  if (!options_.bias_correction) scalars[1] = scalars[2] = 1.0f;  // {lr, 1 - beta1^t, ...}
  return scalars;
}

void AdamW::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                         UpdateTable& table) {
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    slots.push_back({&p.value, &p.grad, &exp_avg_[i], &exp_avg_sq_[i]});
  }
  adamw_update_(table, slots, hyper(), step_scalars_, skip_if);
}

std::vector<std::pair<std::string, Tensor*>> AdamW::state_tensors() {
  return named_state({{".exp_avg", &exp_avg_}, {".exp_avg_sq", &exp_avg_sq_}});
}

}  // namespace course::optim
