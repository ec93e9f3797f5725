// The repository's one tolerance rule: |out - ref| <= atol + rtol * |ref|, per dtype.
//
// Every numeric test compares through all_close, which reports the first mismatches (index,
// value, reference, allowed error) so a failure says where and by how much.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/tensor/dtype.h"

namespace course::testing {

struct Tolerance {
  double atol;
  double rtol;
};

// f32: 1e-5 / 1e-5; f16: 1e-3 / 1e-3 (10 mantissa bits); bf16: 1e-2 / 8e-3 (7 bits); integers
// exact.
Tolerance tolerance_for(DType dtype);

// Kernels computing in f32 from 16-bit inputs: a rounding or two of the dtype on top of the
// reference's (three times the dtype's tolerance; f32's own).
Tolerance accumulated(DType dtype);

::testing::AssertionResult all_close(const std::vector<float>& out, const std::vector<float>& ref,
                                     Tolerance tolerance, int max_reported = 5);

inline ::testing::AssertionResult all_close(const std::vector<float>& out,
                                            const std::vector<float>& ref, DType dtype) {
  return all_close(out, ref, tolerance_for(dtype));
}

}  // namespace course::testing
