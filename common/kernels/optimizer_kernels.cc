// Dispatch of the optimizer updates.
#include "common/kernels/optimizer_kernels.h"

#include <cmath>

#include "common/kernels/launch.h"

namespace course {

namespace {

void check_f32_like(const Tensor& param, const Tensor& other, const char* what) {
  COURSE_CHECK(param.dtype() == DType::kF32, "optimizer parameters must be f32, got ", param.str());
  check_same(param, other, what);
}

}  // namespace

void sgd_update_(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, float lr,
                 float momentum, float weight_decay, bool nesterov, bool first_step) {
  check_f32_like(param, grad, "sgd gradient");
  check_f32_like(param, momentum_buffer, "sgd momentum buffer");
  for_each_index(param.device(), param.numel(),
                 ops::SgdUpdate{param.data_as<float>(), grad.data_as<float>(),
                                momentum_buffer.data_as<float>(), lr, momentum, weight_decay,
                                nesterov, first_step});
}

void adamw_update_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, float lr,
                   float beta1, float beta2, float eps, float weight_decay, int64_t step) {
  check_f32_like(param, grad, "adamw gradient");
  check_f32_like(param, exp_avg, "adamw first moment");
  check_f32_like(param, exp_avg_sq, "adamw second moment");
  COURSE_CHECK(step >= 1, "adamw step counts from 1, got ", step);
  const float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  for_each_index(param.device(), param.numel(),
                 ops::AdamWUpdate{param.data_as<float>(), grad.data_as<float>(),
                                  exp_avg.data_as<float>(), exp_avg_sq.data_as<float>(), lr, beta1,
                                  beta2, eps, weight_decay, correction1, correction2});
}

}  // namespace course
