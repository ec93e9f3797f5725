// e^x and tanh(x) in float as straight-line arithmetic (no library call, no branch), for the
// activations' per-element bodies: GCC vectorises a loop over them, where a call to libm's
// expf or tanhf runs one element at a time (the GPT's GELU spent most of its time in tanhf).
//
// e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 split in two parts, so r is
// exact to float precision), |r| <= ln(2) / 2; e^r by its Taylor polynomial of degree 7
// (truncation under 1e-8 relative), 2^n built in the exponent bits. The polynomial works on x
// clamped to [-87, 88], where 2^n stays a normal float: e^x for x < -87 (below 1.6e-38, which
// would be subnormal) is 0, so a masked score at -inf weighs exactly nothing, and e^x for x > 88
// is e^88 (1.7e38, not inf). A NaN stays NaN. Within 2 ulp of e^x on [-87, 88].
#pragma once

#include <cstdint>
#include <cstring>

#include "common/core/host_device.h"

namespace course::ops {

COURSE_HD inline float exp_poly(float x) {
  const bool underflows = x < -87.0f;
  x = underflows ? -87.0f : x;  // comparisons, not fmaxf/fminf: they keep a NaN, and vectorise
  x = x > 88.0f ? 88.0f : x;
  // Round-to-nearest by adding 1.5 * 2^23: the integer lands in the low mantissa bits.
  constexpr float kShift = 12582912.0f;
  const float shifted = x * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  uint32_t n_bits;
  std::memcpy(&n_bits, &shifted, sizeof n_bits);
  float r = x - n * 0.693145751953125f;  // ln 2's high part: n times it is exact
  r = r - n * 1.42860682030941723212e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // `shifted`'s bits are those of 1.5 * 2^23 plus n (one unit in its last place is 1).
  const uint32_t scale_bits = ((n_bits - 0x4B400000u) + 127u) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return underflows ? 0.0f : p * scale;
}

// tanh(x) = 1 - 2 / (e^(2x) + 1): +-1 beyond |x| = 44, within 2e-7 of tanh(x) everywhere
// (absolute: near 0 the result is a difference of two numbers near 1).
COURSE_HD inline float tanh_poly(float x) { return 1.0f - 2.0f / (exp_poly(2.0f * x) + 1.0f); }

// sigmoid(x) = 1 / (1 + e^-x), with e^-x capped at e^80: below x = -80 the result stays 1.8e-35
// instead of falling to a subnormal float, which a CPU computes with slow microcode. A NaN stays
// NaN (the comparison keeps it).
COURSE_HD inline float sigmoid_poly(float x) {
  const float minus_x = -x > 80.0f ? 80.0f : -x;
  return 1.0f / (1.0f + exp_poly(minus_x));
}

}  // namespace course::ops
