// Device names, and what this build and machine can run.
#include "common/tensor/device.h"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <mutex>

#include "common/core/error.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda" || text == "gpu") return Device::cuda(0);
  if (text.starts_with("cuda:")) {
    int index = -1;
    const std::string_view digits = text.substr(5);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && index >= 0) {
      return Device::cuda(index);
    }
  }
  COURSE_FAIL("unknown device '", text, "' (expected cpu, cuda or cuda:N)");
}

bool cuda_compiled() {
#if COURSE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

struct CudaProbe {
  int count = 0;
  std::string status;
};

const CudaProbe& probe() {
  static const CudaProbe result = [] {
    CudaProbe p;
#if COURSE_WITH_CUDA
    const cudaError_t error = cudaGetDeviceCount(&p.count);
    if (error != cudaSuccess) {
      p.count = 0;
      p.status = std::string("built with CUDA, but no GPU is usable: ") + cudaGetErrorString(error);
      cudaGetLastError();  // clear the sticky error so later calls report their own
    } else {
      p.status = "built with CUDA, " + std::to_string(p.count) + " GPU(s) visible";
    }
#else
    p.status = "built without CUDA (CPU only)";
#endif
    return p;
  }();
  return result;
}

}  // namespace

int cuda_device_count() { return probe().count; }

std::string cuda_status() { return probe().status; }

Device default_device() {
  if (cuda_device_count() > 0) return Device::cuda(0);
  static std::once_flag said;
  std::call_once(said, [] {
    if (cuda_compiled())
      std::fprintf(stderr, "note: %s; running on the CPU\n", cuda_status().c_str());
  });
  return Device::cpu();
}

void require_device(Device device) {
  if (device.is_cpu()) return;
  COURSE_CHECK(cuda_device_count() > 0, "device ", device.str(), " requested, but ", cuda_status());
  COURSE_CHECK(device.index < cuda_device_count(), "device ", device.str(), " requested, but only ",
               cuda_device_count(), " GPU(s) are visible");
}

void set_current_device(Device device) {
  if (device.is_cpu()) return;
  require_device(device);
#if COURSE_WITH_CUDA
  CUDA_CHECK(cudaSetDevice(device.index));
#endif
}

namespace {
std::atomic<int> process_gpu{-1};  // the process device's GPU index; -1: the CPU
}  // namespace

void set_process_device(Device device) {
  set_current_device(device);
  process_gpu = device.is_cuda() ? device.index : -1;
}

Device process_device() {
  const int gpu = process_gpu;
  return gpu < 0 ? Device::cpu() : Device::cuda(gpu);
}

void enter_process_device() { set_current_device(process_device()); }

}  // namespace course
