// The device-factor scalings (device_factor_ops.h): their dispatch and GPU instantiations.
#include "common/kernels/device_factor.h"
#include "common/kernels/device_factor_ops.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/linear.h"
#include "common/kernels/onebit_ops.h"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_scalars(const Tensor& t, int64_t count, Device device, const char* op) {
  COURSE_CHECK(t.defined() && t.dtype() == DType::kF32 && t.numel() == count &&
                   t.device() == device && t.memory_format() == MemoryFormat::kContiguous,
               op, ": expected (", count, ",) f32 on ", device.str(), ", got ", t.str());
}

}  // namespace

void scale_by_(Tensor& x, const Tensor& factor) {
  check_scalars(factor, 1, x.device(), "scale_by_");
  visit_floating(x.dtype(), "scale_by_", [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::ScaleByFactor<T>{x.data_as<T>(), factor.data_as<float>()});
  });
}

void clip_factor(const Tensor& squared_norm, float max_norm, const Tensor& loss_scale,
                 Tensor& factor, Tensor& stats, Tensor& history_slot) {
  const Device device = squared_norm.device();
  check_scalars(squared_norm, 1, device, "clip_factor");
  check_scalars(factor, 1, device, "clip_factor");
  check_scalars(stats, 4, device, "clip_factor");
  check_scalars(history_slot, 1, device, "clip_factor");
  if (loss_scale.defined()) check_scalars(loss_scale, 1, device, "clip_factor");
  COURSE_CHECK(max_norm > 0, "clip_factor: max_norm must be positive, got ", max_norm);
  for_each_index(device, 1,
                 ops::ClipFactor{squared_norm.data_as<float>(), max_norm,
                                 loss_scale.data_or_null<float>(), factor.data_as<float>(),
                                 stats.data_as<float>(), history_slot.data_as<float>()});
}

void trust_ratios(const Tensor& squares, float eta, float weight_decay, Tensor& factor) {
  check_scalars(squares, 2 * factor.numel(), squares.device(), "trust_ratios");
  check_scalars(factor, factor.numel(), squares.device(), "trust_ratios");
  for_each_index(
      squares.device(), factor.numel(),
      ops::TrustRatio{squares.data_as<float>(), eta, weight_decay, factor.data_as<float>()});
}

void warmup_lamb_coefficients(const Tensor& squares, const OneBitLambCoefficients& c, Tensor& coeff,
                              Tensor& frozen) {
  const Device device = squares.device();
  check_scalars(squares, 2 * coeff.numel(), device, "warmup_lamb_coefficients");
  check_scalars(frozen, coeff.numel(), device, "warmup_lamb_coefficients");
  for_each_index(
      device, coeff.numel(),
      ops::WarmupLambCoefficient{squares.data_as<float>(), c.min_coeff, c.max_coeff, c.coeff_beta,
                                 coeff.data_as<float>(), frozen.data_as<float>()});
}

void momentum_scalings(const Tensor& squares, const Tensor& numels, Tensor& scaling) {
  const Device device = squares.device();
  check_scalars(squares, scaling.numel(), device, "momentum_scalings");
  check_scalars(numels, scaling.numel(), device, "momentum_scalings");
  for_each_index(device, 1,
                 ops::MomentumScalings{squares.data_as<float>(), numels.data_as<float>(),
                                       scaling.numel(), scaling.data_as<float>()});
}

void compressed_lamb_coefficients(const Tensor& squares, const Tensor& largest_ratio,
                                  const Tensor& frozen, float weight_decay,
                                  const OneBitLambCoefficients& c, Tensor& last_factor,
                                  Tensor& coeff) {
  const Device device = squares.device();
  const int64_t count = coeff.numel();
  check_scalars(squares, 2 * count, device, "compressed_lamb_coefficients");
  for (const Tensor* t : {&largest_ratio, &frozen, static_cast<const Tensor*>(&last_factor)}) {
    check_scalars(*t, count, device, "compressed_lamb_coefficients");
  }
  for_each_index(device, count,
                 ops::CompressedLambCoefficient{
                     squares.data_as<float>(), largest_ratio.data_as<float>(),
                     frozen.data_as<float>(), weight_decay, c.factor_min, c.factor_max,
                     c.factor_threshold, last_factor.data_as<float>(), coeff.data_as<float>()});
}

void unscale_and_mark_(Tensor& x, Tensor& state) {
  check_scalars(state, ops::kLossScaleSlots, x.device(), "unscale_and_mark_");
  visit_floating(x.dtype(), "unscale_and_mark_", [&]<class T>() {
    for_each_index(x.device(), x.numel(),
                   ops::UnscaleAndMark<T>{x.data_as<T>(), state.data_as<float>()});
  });
}

void loss_scale_update_(Tensor& state, const LossScaleRule& rule) {
  check_scalars(state, ops::kLossScaleSlots, state.device(), "loss_scale_update_");
  for_each_index(state.device(), 1,
                 ops::LossScaleUpdate{state.data_as<float>(), rule.growth, rule.backoff,
                                      static_cast<float>(rule.interval),
                                      static_cast<float>(rule.hysteresis), rule.min_scale});
}

void add_squares_(const Tensor& x, Tensor& sum) {
  check_scalars(sum, 1, x.device(), "add_squares_");
  const Tensor f = x.dtype() == DType::kF32 ? x : cast(x, DType::kF32);
  add_column_sums_(mul(f, f).view({f.numel(), 1}, MemoryFormat::kContiguous), sum);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define DEVICE_FACTOR(T)                             \
  COURSE_INSTANTIATE_FOR_EACH(ops::ScaleByFactor<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::UnscaleAndMark<T>)
COURSE_FLOAT_TYPES(DEVICE_FACTOR)
COURSE_INSTANTIATE_FOR_EACH(ops::ClipFactor)
COURSE_INSTANTIATE_FOR_EACH(ops::TrustRatio)
COURSE_INSTANTIATE_FOR_EACH(ops::WarmupLambCoefficient)
COURSE_INSTANTIATE_FOR_EACH(ops::MomentumScalings)
COURSE_INSTANTIATE_FOR_EACH(ops::CompressedLambCoefficient)
COURSE_INSTANTIATE_FOR_EACH(ops::LossScaleUpdate)

}  // namespace course
