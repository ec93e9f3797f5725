// Fused optimizer updates (bodies in optimizer_ops.h): every parameter of a list updated in one
// launch. All tensors f32, each slot of a parameter of that parameter's shape, one device.
#pragma once

#include <vector>

#include "common/tensor/tensor.h"

namespace course {

// One parameter's tensors, in the order of the update's slots.
using UpdateSlots = std::vector<Tensor*>;

struct SgdHyper {
  float lr, momentum, weight_decay;
  bool nesterov, first_step;
};
// Slots: parameter, gradient, momentum buffer.
void sgd_update_(const std::vector<UpdateSlots>& params, const SgdHyper& hyper);

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
};
// Slots: parameter, gradient, first moment, second moment; `step` counts from 1.
void adamw_update_(const std::vector<UpdateSlots>& params, const AdamWHyper& hyper, int64_t step);

}  // namespace course
