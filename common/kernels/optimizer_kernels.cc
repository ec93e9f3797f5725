// Dispatch of the fused optimizer updates: keeps the pointer table and offsets (on the device
// for a GPU) and launches one kernel over all the parameters' elements.
#include "common/kernels/optimizer_kernels.h"

#include <cmath>

#include "common/kernels/launch.h"
#include "common/kernels/optimizer_ops.h"
#include "common/tensor/pinned_staging.h"

namespace course {

namespace {

void refresh_table(UpdateTable& t, const std::vector<UpdateSlots>& params, int slots_per_param,
                   const char* name) {
  const Device device = params.front().front()->device();
  std::vector<int64_t> pointers, offsets{0};  // pointers travel as i64 tensors
  for (const UpdateSlots& slots : params) {
    COURSE_CHECK(static_cast<int>(slots.size()) == slots_per_param, name, " needs ",
                 slots_per_param, " tensors per parameter");
    for (Tensor* s : slots) {
      COURSE_CHECK(s->dtype() == DType::kF32 && s->device() == device &&
                       s->shape() == slots.front()->shape(),
                   name, ": every tensor of a parameter must be f32 of its shape on ", device.str(),
                   ", got ", s->str());
      pointers.push_back(reinterpret_cast<int64_t>(s->data()));
    }
    offsets.push_back(offsets.back() + slots.front()->numel());
  }
  if (pointers == t.pointers && t.table.device() == device) return;
  t.table = upload_to(device, pointers, {static_cast<int64_t>(pointers.size())});
  t.offsets = upload_to(device, offsets, {static_cast<int64_t>(offsets.size())});
  t.pointers = std::move(pointers);
  t.elements = offsets.back();
}

template <class Update>
void apply(UpdateTable& t, const std::vector<UpdateSlots>& params, const Tensor& step_scalars,
           const Tensor& skip_if, const Update& update, const char* name) {
  if (params.empty()) return;
  constexpr int K = Update::kSlots;
  refresh_table(t, params, K, name);
  COURSE_CHECK(Update::kStepScalars == 0 || (step_scalars.dtype() == DType::kF32 &&
                                             step_scalars.device() == t.table.device() &&
                                             step_scalars.numel() == Update::kStepScalars),
               name, ": needs ", Update::kStepScalars, " f32 step scalars on ",
               t.table.device().str(), ", got ", step_scalars.str());
  COURSE_CHECK(!skip_if.defined() || (skip_if.dtype() == DType::kF32 && skip_if.numel() == 1 &&
                                      skip_if.device() == t.table.device()),
               name, ": the skip flag is a (1,) f32 on ", t.table.device().str(), ", got ",
               skip_if.str());
  const int64_t count = static_cast<int64_t>(params.size());
  const int64_t span = runs_on_host(t.table.device()) ? kCpuChunk : 1;
  for_each_index(t.table.device(), (t.elements + span - 1) / span,
                 ops::MultiTensorApply<K, Update>{reinterpret_cast<float* const*>(t.table.data()),
                                                  t.offsets.data_as<int64_t>(), count, span, update,
                                                  skip_if.data_or_null<float>()},
                 span);
}

}  // namespace

std::vector<float> sgd_step_scalars(float lr, bool first_step) {
  return {lr, first_step ? 1.0f : 0.0f};
}

void sgd_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, const SgdHyper& h,
                 const Tensor& step_scalars, const Tensor& skip_if) {
  apply(table, params, step_scalars, skip_if,
        ops::SgdUpdate{step_scalars.data_as<float>(), h.momentum, h.weight_decay, h.nesterov},
        "sgd");
}

std::vector<float> adamw_step_scalars(float lr, const AdamWHyper& h, int64_t step) {
  COURSE_CHECK(step >= 1, "adamw step counts from 1, got ", step);
  return {lr, 1.0f - std::pow(h.beta1, static_cast<float>(step)),
          1.0f - std::pow(h.beta2, static_cast<float>(step))};
}

void adamw_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, const AdamWHyper& h,
                   const Tensor& step_scalars, const Tensor& skip_if) {
  apply(table, params, step_scalars, skip_if,
        ops::AdamWUpdate{step_scalars.data_as<float>(), h.beta1, h.beta2, h.eps, h.weight_decay},
        "adamw");
}

void momentum_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, float beta1,
                      const Tensor& skip_if) {
  apply(table, params, Tensor(), skip_if, ops::MomentumUpdate{beta1}, "momentum");
}

void frozen_variance_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                             const AdamWHyper& h, const Tensor& step_scalars,
                             const Tensor& skip_if) {
  apply(table, params, step_scalars, skip_if,
        ops::FrozenVarianceUpdate{step_scalars.data_as<float>(), h.eps, h.weight_decay},
        "frozen-variance adam");
}

void lion_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, const LionHyper& h,
                  const Tensor& step_scalars, const Tensor& skip_if) {
  apply(table, params, step_scalars, skip_if,
        ops::LionUpdate{step_scalars.data_as<float>(), h.beta1, h.beta2, h.weight_decay}, "lion");
}

}  // namespace course
