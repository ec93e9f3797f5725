// LayerNorm over the last dimension (the transformer's normalisation): forward keeps each row's
// mean and reciprocal standard deviation for backward; backward returns the input gradient and
// adds the weight and bias gradients.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct LayerNormSaved {
  Tensor mean, rstd;  // (rows,) f32
};

// x (..., C) contiguous, any floating dtype; weight and bias (C,) f32. Returns y like x.
Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          LayerNormSaved& saved);

// Returns dx like x; adds into weight_grad and bias_grad (C,) f32.
Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const LayerNormSaved& saved, Tensor& weight_grad, Tensor& bias_grad);

}  // namespace course
