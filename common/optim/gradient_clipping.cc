// The squares summed on the device, the clip, and a run's clipping.
#include "common/optim/gradient_clipping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/core/error.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/linear.h"

namespace course::optim {

float squared_gradient_sum(const std::vector<nn::Parameter*>& parameters) {
  float squares = 0;
  Tensor on_device;  // (1,) f32 on the device of the gradients summed since the last read
  const auto read = [&] {
    if (on_device.defined()) squares += on_device.to_vector<float>()[0];
  };
  for (const nn::Parameter* p : parameters) {
    if (!on_device.defined() || on_device.device() != p->grad.device()) {
      read();
      on_device = zeros({1}, DType::kF32, p->grad.device());
    }
    const Tensor g = p->grad.dtype() == DType::kF32 ? p->grad : cast(p->grad, DType::kF32);
    add_column_sums_(mul(g, g).view({g.numel(), 1}, MemoryFormat::kContiguous), on_device);
  }
  read();
  return squares;
}

ClippedStep clip_to_norm(float norm, float max_norm,
                         const std::vector<nn::Parameter*>& parameters) {
  COURSE_CHECK(max_norm > 0, "gradients are clipped to a positive norm, got ", max_norm);
  if (!std::isfinite(norm) || norm <= max_norm) return {.norm = norm, .clipped = false};
  const float factor = max_norm / (norm + 1e-6f);
  for (nn::Parameter* p : parameters) scale_(p->grad, factor);
  return {.norm = norm, .clipped = true};
}

GradientClipping::GradientClipping(std::optional<float> max_norm)
    : max_norm_(max_norm.value_or(0)) {
  COURSE_CHECK(!max_norm || *max_norm > 0, "gradients are clipped to a positive norm, got ",
               max_norm_);
}

void GradientClipping::apply(const std::function<float()>& global_norm,
                             const std::vector<nn::Parameter*>& parameters, float grad_scale) {
  if (!on()) return;
  const ClippedStep step = clip_to_norm(global_norm(), max_norm_ * grad_scale, parameters);
  ++steps_;
  if (step.clipped) ++clipped_;
  last_norm_ = step.norm / grad_scale;
  if (std::isfinite(last_norm_)) largest_norm_ = std::max(largest_norm_, last_norm_);
}

void GradientClipping::apply_to_whole(const std::vector<nn::Parameter*>& parameters,
                                      float grad_scale) {
  apply([&] { return std::sqrt(squared_gradient_sum(parameters)); }, parameters, grad_scale);
}

std::optional<float> GradientClipping::last_norm() const {
  if (steps_ == 0) return std::nullopt;
  return last_norm_;
}

std::string GradientClipping::describe() const {
  char line[160];
  std::snprintf(line, sizeof line,
                "gradient norm: last %.4g, largest %.4g, clipped to %g in %lld of %lld steps",
                last_norm_, largest_norm_, max_norm_, static_cast<long long>(clipped_),
                static_cast<long long>(steps_));
  return line;
}

}  // namespace course::optim
