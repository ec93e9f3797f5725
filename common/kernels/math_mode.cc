// The process-wide TF32 switches and the math each data type runs with.
#include "common/kernels/math_mode.h"

#include <atomic>

#include "common/core/error.h"

namespace course {

namespace {
std::atomic<bool> tf32_conv{true}, tf32_matmul{false};
}  // namespace

void set_tf32_switches(Tf32Switches switches) {
  tf32_conv = switches.conv;
  tf32_matmul = switches.matmul;
}

Tf32Switches tf32_switches() { return {.conv = tf32_conv, .matmul = tf32_matmul}; }

LibraryMath library_math(DType dtype, bool allowed) {
  switch (dtype) {
    case DType::kF32:
      return allowed ? LibraryMath::kTf32 : LibraryMath::kStrictF32;
    case DType::kF16:
    case DType::kBF16:
      return LibraryMath::kTensorOp16;
    default:
      COURSE_FAIL("no library math for ", dtype_name(dtype));
  }
}

}  // namespace course
