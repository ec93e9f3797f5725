// Scalings by a factor that stays on the device (bodies in device_factor_ops.h): gradient
// clipping's factor and LARS's and LAMB's trust ratios, computed from norms summed on the device,
// so a step with either never waits for the host to read a norm.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// x *= factor[0]; factor a (1,) f32 on x's device.
void scale_by_(Tensor& x, const Tensor& factor);

// Clipping by global norm: factor (1,) = min(1, max_norm / (norm + 1e-6)) with norm =
// sqrt(squared_norm[0]), 1 for a norm that is not finite; stats (4,) f32 += the step's record
// {last norm / grad_scale, largest finite, clipped steps, steps}; history_slot (1,) = the norm /
// grad_scale. All (f32) on one device.
void clip_factor(const Tensor& squared_norm, float max_norm, float grad_scale, Tensor& factor,
                 Tensor& stats, Tensor& history_slot);

// factor (1,) = eta |w| / (|u| + weight_decay |w|) where both norms are positive, else 1, from
// squares (2,) = {|w|^2, |u|^2}.
void trust_ratio(const Tensor& squares, float eta, float weight_decay, Tensor& factor);

// Adds the sum of the squares of x's elements (any float dtype, in f32) to sum (1,) f32.
void add_squares_(const Tensor& x, Tensor& sum);

}  // namespace course
