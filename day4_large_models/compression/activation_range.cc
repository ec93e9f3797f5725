// Calibration ranges and scales of int8 inputs.
#include "day4_large_models/compression/activation_range.h"

#include <algorithm>
#include <cmath>

#include "common/core/error.h"
#include "common/core/format.h"

namespace day4 {

using namespace course;

std::string calibration_name(Calibration method, double percentile) {
  return method == Calibration::kMinMax ? "min/max" : format_number(percentile) + "th percentile";
}

void ActivationRange::observe(const Tensor& x) {
  COURSE_CHECK(x.dtype() == DType::kF32, "calibration observes f32 inputs, got ", x.str());
  const Tensor host = x.to(Device::cpu());
  const float* values = host.data_as<float>();  // storage order: the layout does not matter here
  const int64_t stride = std::max<int64_t>(1, host.numel() / kSamplesPerBatch);
  for (int64_t i = 0; i < host.numel(); ++i) {
    const float magnitude = std::fabs(values[i]);
    largest_ = std::max(largest_, magnitude);
    if (i % stride == 0) sample_.push_back(magnitude);
  }
}

float ActivationRange::percentile(double p) const {
  COURSE_CHECK(p > 0 && p <= 100, "a percentile is in (0, 100], got ", p);
  COURSE_CHECK(!sample_.empty(), "no calibration batch was observed");
  std::vector<float> sorted = sample_;
  const size_t rank =
      std::min(sorted.size() - 1,
               static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(sorted.size()))) - 1);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank),
                   sorted.end());
  return sorted[rank];
}

float ActivationRange::scale(Calibration method, double p) const {
  const float threshold = method == Calibration::kMinMax ? largest_ : percentile(p);
  return threshold > 0 ? threshold / 127.0f : 1.0f;
}

}  // namespace day4
