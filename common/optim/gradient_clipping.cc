// The squares summed on the device, the clip, and a run's clipping.
#include "common/optim/gradient_clipping.h"

#include <cstdio>

#include "common/core/error.h"
#include "common/kernels/device_factor.h"
#include "common/kernels/elementwise.h"

namespace course::optim {

Tensor squared_gradient_sum(const std::vector<nn::Parameter*>& parameters) {
  const Device device = parameters.empty() ? Device::cpu() : parameters.front()->grad.device();
  Tensor squares = zeros({1}, DType::kF32, device);
  for (const nn::Parameter* p : parameters) {
    COURSE_CHECK(p->grad.device() == device, "gradients on ", device.str(), " and ",
                 p->grad.device().str(), " in one norm");
    add_squares_(p->grad, squares);
  }
  return squares;
}

GradientClipping::GradientClipping(std::optional<float> max_norm)
    : max_norm_(max_norm.value_or(0)) {
  COURSE_CHECK(!max_norm || *max_norm > 0, "gradients are clipped to a positive norm, got ",
               max_norm_);
}

void GradientClipping::apply(const std::function<Tensor()>& squared_global_norm,
                             const std::vector<nn::Parameter*>& parameters,
                             const Tensor& loss_scale) {
  if (!on()) return;
  const Tensor squared = squared_global_norm();
  if (!record_.defined() || record_.device() != squared.device()) {
    factor_ = zeros({1}, DType::kF32, squared.device());
    record_ = zeros({4}, DType::kF32, squared.device());
    norms_ = Tensor::empty({64}, DType::kF32, squared.device());
    pending_ = 0;
  }
  if (pending_ == norms_.numel()) {  // more steps than ever between two reads: a larger log
    Tensor larger = Tensor::empty({2 * pending_}, DType::kF32, norms_.device());
    Tensor head = larger.slice(0, pending_);
    copy_(head, norms_);
    norms_ = larger;
  }
  Tensor slot = norms_.slice(pending_, pending_ + 1);
  clip_factor(squared, max_norm_, loss_scale, factor_, record_, slot);
  ++pending_;
  for (nn::Parameter* p : parameters) scale_by_(p->grad, factor_);
}

void GradientClipping::apply_to_whole(const std::vector<nn::Parameter*>& parameters,
                                      const Tensor& loss_scale) {
  apply([&] { return squared_gradient_sum(parameters); }, parameters, loss_scale);
}

std::vector<float> GradientClipping::record() const {
  return record_.defined() ? record_.to_vector<float>() : std::vector<float>(4, 0.0f);
}

std::optional<float> GradientClipping::last_norm() const {
  const std::vector<float> r = record();
  if (r[3] == 0) return std::nullopt;
  return r[0];
}

std::vector<float> GradientClipping::take_norms() {
  if (pending_ == 0) return {};
  std::vector<float> norms = norms_.slice(0, pending_).to_vector<float>();
  pending_ = 0;
  return norms;
}

int64_t GradientClipping::clipped_steps() const { return static_cast<int64_t>(record()[2]); }

std::string GradientClipping::describe() const {
  const std::vector<float> r = record();
  char line[160];
  std::snprintf(line, sizeof line,
                "gradient norm: last %.4g, largest %.4g, clipped to %g in %lld of %lld steps", r[0],
                r[1], max_norm_, static_cast<long long>(r[2]), static_cast<long long>(r[3]));
  return line;
}

}  // namespace course::optim
