// The wording of gpu_absence.h.
#include "common/tensor/gpu_absence.h"

namespace course {

namespace {

// 12040 as "12.4".
std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string hidden_or_not_allocated(const std::optional<std::string>& visible_devices) {
  if (!visible_devices) {
    return "in a batch job, ask for one (Slurm: --gpus=1); on a desktop, see nvidia-smi";
  }
  if (visible_devices->empty()) return "CUDA_VISIBLE_DEVICES is set empty, which hides them all";
  return "CUDA_VISIBLE_DEVICES=" + *visible_devices +
         " names none that it has (nvidia-smi -L lists them)";
}

}  // namespace

std::string why_no_gpu(const GpuProbeFacts& facts) {
  if (facts.driver_cuda_version == 0) {
    return "no NVIDIA driver on this machine (no GPU, or its driver is not installed)";
  }
  // CUDA's minor version compatibility: a driver of the build's major version runs its minors.
  if (facts.driver_cuda_version / 1000 < facts.build_cuda_version / 1000) {
    const std::string driver = cuda_version(facts.driver_cuda_version);
    return "the NVIDIA driver runs CUDA up to " + driver + ", older than the CUDA " +
           cuda_version(facts.build_cuda_version) +
           " this build needs: update the driver, or build with CUDA " + driver + "'s toolkit";
  }
  if (facts.no_device) {
    return "the NVIDIA driver (CUDA " + cuda_version(facts.driver_cuda_version) +
           ") sees no GPU: " + hidden_or_not_allocated(facts.visible_devices);
  }
  return "CUDA: " + facts.cuda_words;
}

}  // namespace course
