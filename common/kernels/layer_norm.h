// The transformer's normalisations over the last dimension: LayerNorm (GPT-2, ViT) and RMSNorm
// (Llama: scaled by the root mean square, no centring, no bias). Forward keeps each row's
// reciprocal standard deviation (and LayerNorm its mean) for backward; backward returns the
// input gradient and adds the parameter gradients.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct LayerNormSaved {
  Tensor mean, rstd;  // (rows,) f32; RMSNorm keeps no mean
};

// x (..., C) contiguous, any floating dtype; weight and bias (C,) f32. Returns y like x.
Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          LayerNormSaved& saved);

// Returns dx like x; adds into weight_grad and bias_grad (C,) f32.
Tensor layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const LayerNormSaved& saved, Tensor& weight_grad, Tensor& bias_grad);

// y = x / sqrt(mean(x^2) + eps) * weight; x as above, weight (C,) f32.
Tensor rms_norm_forward(const Tensor& x, const Tensor& weight, float eps, LayerNormSaved& saved);

// Returns dx like x; adds into weight_grad (C,) f32.
Tensor rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const LayerNormSaved& saved, Tensor& weight_grad);

}  // namespace course
