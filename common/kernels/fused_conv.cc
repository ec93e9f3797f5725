// FusedConv: its weights' checks and the choice of back end.
#include "common/kernels/fused_conv.h"

#include <cmath>

namespace course {

FusedConv::FusedConv(const FusedConvWeights& w, float input_scale, Device device,
                     float output_scale)
    : int8_(w.weight.dtype() == DType::kI8), device_(device) {
  COURSE_CHECK(w.weight.dim() == 4 && w.weight.size(2) == w.weight.size(3) &&
                   w.weight.device().is_cpu() &&
                   w.weight.memory_format() == MemoryFormat::kContiguous &&
                   (int8_ || w.weight.dtype() == DType::kF32),
               "FusedConv takes f32 or i8 weights (O, C, K, K) on the CPU, got ", w.weight.str());
  out_channels_ = w.weight.size(0);
  in_channels_ = w.weight.size(1);
  const Shape per_channel{out_channels_};
  COURSE_CHECK(
      w.bias.dtype() == DType::kF32 && w.bias.shape() == per_channel && w.bias.device().is_cpu(),
      "FusedConv: the bias must be f32 (", out_channels_, ",) on the CPU, got ", w.bias.str());
  if (int8_) {
    COURSE_CHECK(w.scales.defined() && w.scales.dtype() == DType::kF32 &&
                     w.scales.shape() == per_channel && w.scales.device().is_cpu(),
                 "FusedConv: i8 weights need f32 scales (", out_channels_, ",) on the CPU");
    COURSE_CHECK(input_scale > 0 && std::isfinite(input_scale),
                 "FusedConv: i8 inputs need a positive scale, got ", input_scale);
  }
  COURSE_CHECK(output_scale == 0 || (int8_ && output_scale > 0 && std::isfinite(output_scale)),
               "FusedConv: an i8 output needs i8 weights and a positive scale, got ", output_scale);
  backend_ = device.runs_host_kernels()
                 ? detail::onednn_fused_conv(w, input_scale, output_scale)
                 : detail::cuda_fused_conv(w, input_scale, output_scale, device);
}

FusedConv::~FusedConv() = default;
FusedConv::FusedConv(FusedConv&&) noexcept = default;
FusedConv& FusedConv::operator=(FusedConv&&) noexcept = default;

Tensor FusedConv::forward(const Tensor& x) {
  COURSE_CHECK(x.dim() == 4 && x.size(1) == in_channels_ && x.device() == device_ &&
                   x.memory_format() == MemoryFormat::kChannelsLast &&
                   x.dtype() == (int8_ ? DType::kI8 : DType::kF32),
               "FusedConv takes a channels-last ", int8_ ? "i8" : "f32", " (N, ", in_channels_,
               ", H, W) on ", device_.str(), ", got ", x.str());
  return backend_->forward(x);
}

}  // namespace course
