// Lion's fused update (the body is common/kernels/optimizer_ops.h's LionUpdate).
#include "common/optim/lion.h"

namespace course::optim {

Lion::Lion(std::vector<std::pair<std::string, nn::Parameter*>> params, const LionOptions& options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  COURSE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
               "Lion betas must be in [0, 1)");
  momentum_ = zeros_like_params();
}

void Lion::apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                        UpdateTable& table) {
  std::vector<UpdateSlots> slots;
  for (size_t i : indices) {
    nn::Parameter& p = *params_[i].second;
    slots.push_back({&p.value, &p.grad, &momentum_[i]});
  }
  lion_update_(table, slots, {options_.beta1, options_.beta2, options_.weight_decay}, step_scalars_,
               skip_if);
}

std::vector<std::pair<std::string, Tensor*>> Lion::state_tensors() {
  return named_state({{".exp_avg", &momentum_}});
}

}  // namespace course::optim
