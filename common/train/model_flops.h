// Model FLOPs utilisation (MFU), as llm.c and Megatron-LM report it: the model's training FLOPs
// per sample (a forward's 2 x multiply-adds, a backward's twice that: 6 x the multiply-adds,
// attention's included; recomputation not counted) times the samples per second, over the
// devices' dense bf16 tensor-core peak. One peak for every precision, as both report it, so
// an f32 run's MFU says how far it is from what the GPU offers in bf16.
#pragma once

#include <optional>
#include <string>

#include "common/tensor/device.h"

namespace course::train {

struct PeakFlops {
  double flops_per_second;  // dense bf16, one device
  std::string what;         // "H100/H200 SXM, dense bf16"
};

// The peak of a GPU by its model's name (cudaDeviceProp::name): H100/H200 (SXM and PCIe/NVL),
// GH200, A100, L40S, L4, V100; none for another GPU, the CPU or the simulated accelerator.
std::optional<PeakFlops> peak_flops(const std::string& device_model);

// 6 x the forward's multiply-adds.
inline double training_flops(double forward_multiply_adds) { return 6.0 * forward_multiply_adds; }

// The summary's line: the achieved TFLOP/s of `units_per_second` (over `devices` devices) at
// `flops_per_unit` training FLOPs each, and the MFU against `device_model`'s peak, or why there
// is none.
std::string model_flops_line(double units_per_second, double flops_per_unit, int devices,
                             const std::string& device_model);

}  // namespace course::train
