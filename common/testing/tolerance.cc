// The tolerance rule and its mismatch report.
#include "common/testing/tolerance.h"

#include <cmath>

namespace course::testing {

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {1e-5, 1e-5};
    case DType::kF16:
      return {1e-3, 1e-3};
    case DType::kBF16:
      return {1e-2, 8e-3};
    default:
      return {0.0, 0.0};
  }
}

Tolerance accumulated(DType dtype) {
  const Tolerance t = tolerance_for(dtype);
  return dtype == DType::kF32 ? t : Tolerance{3 * t.atol, 3 * t.rtol};
}

::testing::AssertionResult all_close(const std::vector<float>& out, const std::vector<float>& ref,
                                     Tolerance tolerance, int max_reported) {
  if (out.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << out.size() << " values vs " << ref.size() << " references";
  }
  int64_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < out.size(); ++i) {
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(ref[i]);
    const double error = std::fabs(static_cast<double>(out[i]) - ref[i]);
    const bool same_special = (std::isnan(out[i]) && std::isnan(ref[i])) || out[i] == ref[i];
    if (same_special || error <= allowed) continue;
    if (mismatches++ < max_reported) {
      failure << "\n  [" << i << "] got " << out[i] << ", expected " << ref[i] << " (error "
              << error << " > allowed " << allowed << ")";
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << mismatches << " of " << out.size() << " values differ (atol "
                 << tolerance.atol << ", rtol " << tolerance.rtol << ")";
}

}  // namespace course::testing
