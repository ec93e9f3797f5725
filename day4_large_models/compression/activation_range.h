// Calibration of one layer's input for int8 inference: the range its values take over a few
// batches, and the per-tensor symmetric scale that range gives. Min/max calibration keeps every
// value representable (scale = max |x| / 127); percentile calibration clips the rarest largest
// values (scale = the p-th percentile of |x| / 127) so the rest get finer steps.
#pragma once

#include <string>
#include <vector>

#include "common/tensor/tensor.h"

namespace day4 {

enum class Calibration { kMinMax, kPercentile };

std::string calibration_name(Calibration method, double percentile);  // "99.99th percentile"

class ActivationRange {
 public:
  // Records x (f32, any device and memory format): its largest magnitude exactly, and an evenly
  // strided sample of at most kSamplesPerBatch magnitudes for the percentile.
  void observe(const course::Tensor& x);

  float largest() const { return largest_; }
  float percentile(double p) const;  // of the sampled |x|, p in (0, 100]
  // The input scale: the clipping threshold / 127 (1 if every input was 0).
  float scale(Calibration method, double percentile) const;

  static constexpr int64_t kSamplesPerBatch = 1 << 16;

 private:
  float largest_ = 0;
  std::vector<float> sample_;
};

}  // namespace day4
