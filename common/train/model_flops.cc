// The peak table (NVIDIA's data sheets, dense bf16 tensor-core FLOP/s, without sparsity) and
// the summary's line.
#include "common/train/model_flops.h"

#include <cstdio>
#include <vector>

namespace course::train {

std::optional<PeakFlops> peak_flops(const std::string& model) {
  struct Entry {
    const char* name_part;
    double tflops;
    const char* what;
  };
  // The first entry whose name part the model's name contains; PCIe/NVL variants before the
  // SXM default of the same GPU.
  static const std::vector<Entry> table = {
      {"H100 PCIe", 756.0, "H100 PCIe, dense bf16"},
      {"H100 NVL", 835.0, "H100 NVL, dense bf16"},
      {"H200 NVL", 835.0, "H200 NVL, dense bf16"},
      {"GH200", 989.4, "GH200, dense bf16"},
      {"H100", 989.4, "H100 SXM, dense bf16"},
      {"H200", 989.4, "H200 SXM, dense bf16"},
      {"A100", 312.0, "A100, dense bf16"},
      {"L40S", 362.1, "L40S, dense bf16"},
      {"L4", 121.0, "L4, dense bf16"},
      {"V100", 125.0, "V100, dense f16"},
  };
  for (const Entry& e : table) {
    if (model.find(e.name_part) != std::string::npos) return PeakFlops{e.tflops * 1e12, e.what};
  }
  return std::nullopt;
}

std::string model_flops_line(double units_per_second, double flops_per_unit, int devices,
                             const std::string& model) {
  const double achieved = units_per_second * flops_per_unit / devices;  // per device
  char line[256];
  const std::optional<PeakFlops> peak = peak_flops(model);
  if (peak) {
    std::snprintf(line, sizeof line,
                  "model FLOPs            %.2f TFLOP/s per device, MFU %.1f%% of the %s peak "
                  "(%.0f TFLOP/s)\n",
                  achieved / 1e12, 100.0 * achieved / peak->flops_per_second, peak->what.c_str(),
                  peak->flops_per_second / 1e12);
  } else {
    std::snprintf(line, sizeof line,
                  "model FLOPs            %.3f TFLOP/s per device (no MFU: no peak figure for "
                  "the %s)\n",
                  achieved / 1e12, model.c_str());
  }
  return line;
}

}  // namespace course::train
