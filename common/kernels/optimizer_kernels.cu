// The fused optimizer updates (optimizer_ops.h): the pointer table and offsets kept (on the
// device for a GPU) and one kernel launched over all the parameters' elements; their GPU
// instantiations.
#include <algorithm>
#include <cmath>

#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/onebit_ops.h"
#include "common/kernels/optimizer_kernels.h"
#include "common/kernels/optimizer_ops.h"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/tensor/pinned_staging.h"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

// The per-tensor scalars that end an update's slots (optimizer_ops.h), 0 for most updates.
template <class Update>
constexpr int scalar_slots() {
  if constexpr (requires { Update::kScalarSlots; }) {
    return Update::kScalarSlots;
  } else {
    return 0;
  }
}

void refresh_table(UpdateTable& t, const std::vector<UpdateSlots>& params, int slots_per_param,
                   int scalar_slots, const char* name) {
  const Device device = params.front().front()->device();
  std::vector<int64_t> pointers, offsets{0};  // pointers travel as i64 tensors
  for (const UpdateSlots& slots : params) {
    COURSE_CHECK(static_cast<int>(slots.size()) == slots_per_param, name, " needs ",
                 slots_per_param, " tensors per parameter");
    for (int k = 0; k < slots_per_param; ++k) {
      const Tensor* s = slots[k];
      const bool scalar = k >= slots_per_param - scalar_slots;
      COURSE_CHECK(s->dtype() == DType::kF32 && s->device() == device &&
                       (scalar ? s->numel() == 1 : s->shape() == slots.front()->shape()),
                   name, ": every tensor of a parameter must be f32 ",
                   scalar ? "of one element" : "of its shape", " on ", device.str(), ", got ",
                   s->str());
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
  refresh_table(t, params, K, scalar_slots<Update>(), name);
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

// Elements per chunk of sums_of_squares_: a row of the row kernels, long enough that a warp's
// 32 lanes each add 512 elements, short enough that a large tensor still gives many rows.
constexpr int64_t kSquaresChunk = 16384;

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

void zero_tensors_(UpdateTable& table, const std::vector<UpdateSlots>& tensors) {
  apply(table, tensors, Tensor(), Tensor(), ops::ZeroUpdate{}, "zero");
}

void momentum_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, float beta1,
                      const Tensor& skip_if) {
  apply(table, params, Tensor(), skip_if, ops::MomentumUpdate<false>{beta1}, "momentum");
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

void lars_update_(UpdateTable& table, const std::vector<UpdateSlots>& params, float momentum,
                  float weight_decay, const Tensor& step_scalars) {
  apply(table, params, step_scalars, Tensor(),
        ops::LarsUpdate{step_scalars.data_as<float>(), momentum, weight_decay}, "lars");
}

void lamb_direction_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                     const AdamWHyper& h, const Tensor& step_scalars) {
  apply(table, params, step_scalars, Tensor(),
        ops::LambDirection{step_scalars.data_as<float>(), h.beta1, h.beta2, h.eps, h.weight_decay},
        "lamb");
}

void trust_step_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                 const Tensor& step_scalars) {
  apply(table, params, step_scalars, Tensor(), ops::TrustStep{step_scalars.data_as<float>()},
        "trust step");
}

namespace {

// Rebuilds the chunks of `tensors` where one moved or changed length (a tensor's chunks start at
// its own first element, kSquaresChunk long).
void refresh_chunks(SquaresTable& t, const std::vector<const Tensor*>& tensors,
                    const std::vector<int64_t>& targets, const Tensor& out, const char* name) {
  const Device device = out.device();
  std::vector<int64_t> key;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& x = *tensors[i];
    COURSE_CHECK(x.dtype() == DType::kF32 && x.device() == device &&
                     x.memory_format() == MemoryFormat::kContiguous,
                 name, " takes contiguous f32 tensors on ", device.str(), ", got ", x.str());
    COURSE_CHECK(targets[i] >= 0 && targets[i] < out.numel(), name, ": target ", targets[i],
                 " outside the ", out.numel(), " results");
    const int64_t address = x.numel() > 0 ? reinterpret_cast<int64_t>(x.data()) : 0;
    key.insert(key.end(), {address, x.numel(), targets[i]});
  }
  if (key == t.key && t.chunks.device() == device) return;
  std::vector<int64_t> chunks, firsts{0};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t address = key[3 * i], length = key[3 * i + 1];
    for (int64_t begin = 0; begin < length; begin += kSquaresChunk) {
      chunks.push_back(address + begin * static_cast<int64_t>(sizeof(float)));
      chunks.push_back(std::min(kSquaresChunk, length - begin));
    }
    firsts.push_back(static_cast<int64_t>(chunks.size() / 2));
  }
  // Every tensor empty: no chunk, and no tensor of chunks (an empty one has no storage).
  const bool none = chunks.empty();
  t.chunks = none ? Tensor() : upload_to(device, chunks, {static_cast<int64_t>(chunks.size())});
  t.firsts = upload_to(device, firsts, {static_cast<int64_t>(firsts.size())});
  t.targets = upload_to(device, targets, {static_cast<int64_t>(targets.size())});
  t.partial = none ? Tensor() : Tensor::empty({firsts.back()}, DType::kF32, device);
  t.key = std::move(key);
}

template <ops::ChunkReduce kReduce>
void reduce_tensors_(SquaresTable& t, const std::vector<const Tensor*>& tensors,
                     const std::vector<int64_t>& targets, Tensor& out, const char* name) {
  COURSE_CHECK(targets.size() == tensors.size(), name, ": ", tensors.size(), " tensors, ",
               targets.size(), " targets");
  if (tensors.empty()) return;
  COURSE_CHECK(out.dtype() == DType::kF32 && out.memory_format() == MemoryFormat::kContiguous, name,
               " writes to a contiguous f32 tensor, got ", out.str());
  refresh_chunks(t, tensors, targets, out, name);
  const Device device = out.device();
  for_each_row(device, t.partial.defined() ? t.partial.numel() : 0, kSquaresChunk,
               ops::ChunkReduction<kReduce>{t.chunks.data_or_null<int64_t>(),
                                            t.partial.data_or_null<float>()});
  for_each_index(
      device, static_cast<int64_t>(tensors.size()),
      ops::CombineChunks<kReduce>{t.partial.data_or_null<float>(), t.firsts.data_as<int64_t>(),
                                  t.targets.data_as<int64_t>(), out.data_as<float>()});
}

}  // namespace

void sums_of_squares_(SquaresTable& t, const std::vector<const Tensor*>& tensors,
                      const std::vector<int64_t>& targets, Tensor& sums) {
  reduce_tensors_<ops::ChunkReduce::kSumOfSquares>(t, tensors, targets, sums, "sums_of_squares_");
}

void maxima_(SquaresTable& t, const std::vector<const Tensor*>& tensors,
             const std::vector<int64_t>& targets, Tensor& maxima) {
  reduce_tensors_<ops::ChunkReduce::kMaximum>(t, tensors, targets, maxima, "maxima_");
}

void multiply_(UpdateTable& table, const std::vector<UpdateSlots>& pairs) {
  apply(table, pairs, Tensor(), Tensor(), ops::MultiplyUpdate{}, "multiply");
}

void nonzero_mask_(UpdateTable& table, const std::vector<UpdateSlots>& pairs) {
  apply(table, pairs, Tensor(), Tensor(), ops::NonzeroMask{}, "nonzero mask");
}

void scaled_momentum_update_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                             float beta1) {
  apply(table, params, Tensor(), Tensor(), ops::MomentumUpdate<true>{beta1}, "scaled momentum");
}

void onebit_lamb_direction_(UpdateTable& table, const std::vector<UpdateSlots>& params,
                            const AdamWHyper& h) {
  apply(table, params, Tensor(), Tensor(),
        ops::OneBitLambDirection{h.beta1, h.beta2, h.eps, h.weight_decay}, "1-bit lamb");
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::SgdUpdate::kSlots, ops::SgdUpdate>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::AdamWUpdate::kSlots, ops::AdamWUpdate>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::LionUpdate::kSlots, ops::LionUpdate>)
COURSE_INSTANTIATE_FOR_EACH(
    ops::MultiTensorApply<ops::MomentumUpdate<false>::kSlots, ops::MomentumUpdate<false>>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::ZeroUpdate::kSlots, ops::ZeroUpdate>)
COURSE_INSTANTIATE_FOR_EACH(
    ops::MultiTensorApply<ops::FrozenVarianceUpdate::kSlots, ops::FrozenVarianceUpdate>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::LarsUpdate::kSlots, ops::LarsUpdate>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::LambDirection::kSlots, ops::LambDirection>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::TrustStep::kSlots, ops::TrustStep>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::MultiplyUpdate::kSlots, ops::MultiplyUpdate>)
COURSE_INSTANTIATE_FOR_EACH(ops::MultiTensorApply<ops::NonzeroMask::kSlots, ops::NonzeroMask>)
COURSE_INSTANTIATE_FOR_EACH(
    ops::MultiTensorApply<ops::MomentumUpdate<true>::kSlots, ops::MomentumUpdate<true>>)
COURSE_INSTANTIATE_FOR_EACH(
    ops::MultiTensorApply<ops::OneBitLambDirection::kSlots, ops::OneBitLambDirection>)
COURSE_INSTANTIATE_FOR_EACH_ROW(ops::ChunkReduction<ops::ChunkReduce::kSumOfSquares>)
COURSE_INSTANTIATE_FOR_EACH_ROW(ops::ChunkReduction<ops::ChunkReduce::kMaximum>)
COURSE_INSTANTIATE_FOR_EACH(ops::CombineChunks<ops::ChunkReduce::kSumOfSquares>)
COURSE_INSTANTIATE_FOR_EACH(ops::CombineChunks<ops::ChunkReduce::kMaximum>)

}  // namespace course
