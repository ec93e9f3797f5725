// The global norm's clip, and a run's clipping.
#include "common/parallel/gradient_clipping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/core/error.h"
#include "common/kernels/elementwise.h"

namespace course::parallel {

ClippedStep clip_gradient_norm(TrainingParallelism& parallelism, float max_norm) {
  COURSE_CHECK(max_norm > 0, "gradients are clipped to a positive norm, got ", max_norm);
  const float norm = parallelism.gradient_norm();
  if (!std::isfinite(norm) || norm <= max_norm) return {.norm = norm, .clipped = false};
  const float factor = max_norm / (norm + 1e-6f);
  for (const auto& named : parallelism.optimized()) scale_(named.second->grad, factor);
  return {.norm = norm, .clipped = true};
}

GradientClipping::GradientClipping(float max_norm) : max_norm_(max_norm) {
  COURSE_CHECK(max_norm >= 0, "a clipping norm must not be negative (0: off), got ", max_norm);
}

void GradientClipping::apply(TrainingParallelism& parallelism) {
  if (!on()) return;
  const ClippedStep step = clip_gradient_norm(parallelism, max_norm_);
  ++steps_;
  if (step.clipped) ++clipped_;
  last_norm_ = step.norm;
  largest_norm_ = std::max(largest_norm_, step.norm);
}

std::string GradientClipping::describe() const {
  char line[160];
  std::snprintf(line, sizeof line,
                "gradient norm: last %.4g, largest %.4g, clipped to %g in %lld of %lld steps",
                last_norm_, largest_norm_, max_norm_, static_cast<long long>(clipped_),
                static_cast<long long>(steps_));
  return line;
}

}  // namespace course::parallel
