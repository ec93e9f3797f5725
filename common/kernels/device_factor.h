// Scalings by a factor that stays on the device (bodies in device_factor_ops.h): gradient
// clipping's factor, LARS's and LAMB's trust ratios, computed from norms summed on the device,
// and dynamic loss scaling's scale and found-inf flag, so a step with any of them never waits
// for the host to read a value.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// x *= factor[0]; factor a (1,) f32 on x's device.
void scale_by_(Tensor& x, const Tensor& factor);

// Clipping by global norm: factor (1,) = min(1, limit / (norm + 1e-6)) with norm =
// sqrt(squared_norm[0]) and limit = max_norm x loss_scale[0] (1 when undefined), 1 for a norm
// that is not finite; stats (4,) f32 += the step's record {last norm / scale, largest finite,
// clipped steps, steps}; history_slot (1,) = the norm / scale. All (f32) on one device.
void clip_factor(const Tensor& squared_norm, float max_norm, const Tensor& loss_scale,
                 Tensor& factor, Tensor& stats, Tensor& history_slot);

// factor[i] = eta |w| / (|u| + weight_decay |w|) where both norms are positive, else 1, from
// squares[2 i], squares[2 i + 1] = |w|^2, |u|^2: factor (P,), squares (2 P,), one launch.
void trust_ratios(const Tensor& squares, float eta, float weight_decay, Tensor& factor);

// 1-bit LAMB's per-tensor coefficients as DeepSpeed's OnebitLamb takes them (onebit_ops.h), each
// a (P,) f32 on one device, one launch each:
//   warm-up: coeff = |w| / |u| clamped (squares (2 P,) = |w|^2, |u|^2), its average into frozen;
//   first compressed step: scaling from the momenta's squares (P,) and element counts (P,);
//   compressed steps: coeff = frozen x a factor from largest_ratio (P,) and squares (2 P,) =
//   |u|^2, |p|^2, kept in last_factor.
struct OneBitLambCoefficients {
  float max_coeff = 10.0f, min_coeff = 0.01f, coeff_beta = 0.9f;
  float factor_max = 4.0f, factor_min = 0.5f, factor_threshold = 0.1f;
  bool operator==(const OneBitLambCoefficients&) const = default;
};
void warmup_lamb_coefficients(const Tensor& squares, const OneBitLambCoefficients& c, Tensor& coeff,
                              Tensor& frozen);
void momentum_scalings(const Tensor& squares, const Tensor& numels, Tensor& scaling);
void compressed_lamb_coefficients(const Tensor& squares, const Tensor& largest_ratio,
                                  const Tensor& frozen, float weight_decay,
                                  const OneBitLambCoefficients& c, Tensor& last_factor,
                                  Tensor& coeff);

// Dynamic loss scaling with its state (5,) f32 on the device {scale, found_inf, clean steps,
// skipped steps, overflows still tolerated}: unscale_and_mark_ divides x by the scale and sets
// found_inf where a result is not finite; loss_scale_update_ then, after an overflow, counts a
// skipped step and backs the scale off once `hysteresis` overflows have come (not below
// min_scale), or grows it after `interval` clean steps in a row.
struct LossScaleRule {
  float growth, backoff;
  int64_t interval, hysteresis;
  float min_scale;
};
void unscale_and_mark_(Tensor& x, Tensor& state);
void loss_scale_update_(Tensor& state, const LossScaleRule& rule);

// Adds the sum of the squares of x's elements (any float dtype, in f32) to sum (1,) f32.
void add_squares_(const Tensor& x, Tensor& sum);

}  // namespace course
