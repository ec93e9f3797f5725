// 16-bit floating-point storage types, IEEE half (f16) and bfloat16 (bf16).
//
// Both hold raw bits and convert to and from float with round-to-nearest-even, in COURSE_HD
// code so the CPU and the GPU round identically. Arithmetic is done in float: a kernel loads,
// computes in f32 and stores, as mixed-precision training does.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/core/host_device.h"

namespace course {

COURSE_HD inline uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

COURSE_HD inline float bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

COURSE_HD inline uint16_t float_to_half_bits(float value) {
  uint32_t magnitude = float_bits(value) & 0x7fffffffu;
  const uint16_t sign = static_cast<uint16_t>((float_bits(value) >> 16) & 0x8000u);
  if (magnitude >= 0x7f800000u) {  // inf stays inf; NaN stays a quiet NaN
    return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x0200u : 0u);
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: overflow to inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14 the result is subnormal: adding 0.5 aligns the mantissa so that the float
    // adder itself rounds to nearest even at the half's last subnormal bit.
    const float aligned = bits_float(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(float_bits(aligned) - 0x3f000000u);
  }
  const uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += 0xc8000fffu + odd;  // re-bias the exponent (127 -> 15) and round half to even
  return sign | static_cast<uint16_t>(magnitude >> 13);
}

COURSE_HD inline float half_bits_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(magnitude));
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

COURSE_HD inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

COURSE_HD inline float bfloat16_bits_to_float(uint16_t bits) {
  return bits_float(static_cast<uint32_t>(bits) << 16);
}

struct Half {
  uint16_t bits = 0;
  Half() = default;
  COURSE_HD explicit Half(float value) : bits(float_to_half_bits(value)) {}
  COURSE_HD explicit operator float() const { return half_bits_to_float(bits); }
  COURSE_HD static Half from_bits(uint16_t raw) {
    Half h;
    h.bits = raw;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  COURSE_HD explicit BFloat16(float value) : bits(float_to_bfloat16_bits(value)) {}
  COURSE_HD explicit operator float() const { return bfloat16_bits_to_float(bits); }
  COURSE_HD static BFloat16 from_bits(uint16_t raw) {
    BFloat16 b;
    b.bits = raw;
    return b;
  }
};

}  // namespace course
