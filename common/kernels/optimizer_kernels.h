// Per-tensor optimizer updates (bodies in optimizer_ops.h): all operands f32 of one shape and
// device. The optimizers in common/optim loop over parameters and call these.
#pragma once

#include "common/kernels/optimizer_ops.h"
#include "common/tensor/tensor.h"

namespace course {

void sgd_update_(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, float lr,
                 float momentum, float weight_decay, bool nesterov, bool first_step);
void adamw_update_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, float lr,
                   float beta1, float beta2, float eps, float weight_decay, int64_t step);

}  // namespace course
