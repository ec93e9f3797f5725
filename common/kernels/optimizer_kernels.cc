// Dispatch of the fused optimizer updates: builds the pointer table and offsets (on the
// device for a GPU) and launches one kernel over all the parameters' elements.
#include "common/kernels/optimizer_kernels.h"

#include <cmath>

#include "common/kernels/launch.h"
#include "common/kernels/optimizer_ops.h"

namespace course {

namespace {

template <class Update>
void apply(const std::vector<UpdateSlots>& params, const Update& update, const char* name) {
  if (params.empty()) return;
  constexpr int K = Update::kSlots;
  const Device device = params.front().front()->device();
  std::vector<int64_t> table, offsets{0};  // pointers travel as i64 tensors
  for (const UpdateSlots& slots : params) {
    COURSE_CHECK(slots.size() == K, name, " needs ", K, " tensors per parameter");
    for (Tensor* t : slots) {
      COURSE_CHECK(t->dtype() == DType::kF32 && t->device() == device &&
                       t->shape() == slots.front()->shape(),
                   name, ": every tensor of a parameter must be f32 of its shape on ", device.str(),
                   ", got ", t->str());
      table.push_back(reinterpret_cast<int64_t>(t->data()));
    }
    offsets.push_back(offsets.back() + slots.front()->numel());
  }
  const Tensor table_t = Tensor::from_vector(table, {static_cast<int64_t>(table.size())}, device);
  const Tensor offsets_t =
      Tensor::from_vector(offsets, {static_cast<int64_t>(offsets.size())}, device);
  for_each_index(device, offsets.back(),
                 ops::MultiTensorApply<K, Update>{reinterpret_cast<float* const*>(table_t.data()),
                                                  offsets_t.data_as<int64_t>(),
                                                  static_cast<int64_t>(params.size()), update});
}

}  // namespace

void sgd_update_(const std::vector<UpdateSlots>& params, const SgdHyper& h) {
  apply(params, ops::SgdUpdate{h.lr, h.momentum, h.weight_decay, h.nesterov, h.first_step}, "sgd");
}

void adamw_update_(const std::vector<UpdateSlots>& params, const AdamWHyper& h, int64_t step) {
  COURSE_CHECK(step >= 1, "adamw step counts from 1, got ", step);
  apply(params,
        ops::AdamWUpdate{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay,
                         1.0f - std::pow(h.beta1, static_cast<float>(step)),
                         1.0f - std::pow(h.beta2, static_cast<float>(step))},
        "adamw");
}

}  // namespace course
