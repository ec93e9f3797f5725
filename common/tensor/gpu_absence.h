// Why no GPU is usable, in the user's terms. CUDA's own words mislead on the commonest machine:
// with no NVIDIA driver at all it says "CUDA driver version is insufficient for CUDA runtime
// version", which reads as an old driver. The facts are gathered by device.cc's probe; the
// wording is kept apart from CUDA so that each case is tested with its conditions simulated.
#pragma once

#include <optional>
#include <string>

namespace course {

struct GpuProbeFacts {
  int driver_cuda_version = 0;  // the newest CUDA the loaded driver runs (12040: 12.4); 0: none
  int build_cuda_version = 0;   // the CUDA runtime this build links (CUDART_VERSION)
  bool no_device = false;       // the driver runs but finds no GPU (cudaErrorNoDevice)
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES, when set
  std::string cuda_words;                      // CUDA's message for the failure
};

// "no NVIDIA driver on this machine ...", "the NVIDIA driver runs CUDA up to 12.4, older than
// ...", "the NVIDIA driver sees no GPU ...", or CUDA's words where none of those is the cause.
std::string why_no_gpu(const GpuProbeFacts& facts);

}  // namespace course
