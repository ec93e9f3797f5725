// Device names, and what this build and machine can run.
#include "common/tensor/device.h"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "common/core/error.h"
#include "common/tensor/gpu_absence.h"

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::kCPU:
      return "cpu";
    case DeviceKind::kCUDA:
      return "cuda:" + std::to_string(index);
    case DeviceKind::kSim:
      break;
  }
  return "sim:" + std::to_string(index);
}

namespace {

// The N of "name:N", or -1 when `text` is not that.
int indexed(std::string_view text, std::string_view name) {
  if (!text.starts_with(name) || text.size() <= name.size() + 1 || text[name.size()] != ':') {
    return -1;
  }
  int index = -1;
  const std::string_view digits = text.substr(name.size() + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return error == std::errc() && end == digits.data() + digits.size() ? index : -1;
}

}  // namespace

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda" || text == "gpu") return Device::cuda(0);
  if (text == "sim") return Device::sim(0);
  if (const int gpu = indexed(text, "cuda"); gpu >= 0) return Device::cuda(gpu);
  if (const int sim = indexed(text, "sim"); sim >= 0) return Device::sim(sim);
  COURSE_FAIL("unknown device '", text, "' (expected cpu, cuda, cuda:N, sim or sim:N)");
}

DeviceRequest parse_device_request(std::string_view text) {
  if (text.empty()) return {};
  return {.named = parse_device(text),
          .per_rank = text == "cuda" || text == "gpu" || text == "sim"};
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
      GpuProbeFacts facts{.build_cuda_version = CUDART_VERSION,
                          .no_device = error == cudaErrorNoDevice,
                          .cuda_words = cudaGetErrorString(error)};
      if (cudaDriverGetVersion(&facts.driver_cuda_version) != cudaSuccess) {
        facts.driver_cuda_version = 0;
      }
      if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
        facts.visible_devices = visible;
      p.status = "no GPU is usable: " + why_no_gpu(facts);
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

std::string device_model(Device device) {
  if (device.is_cpu()) return "CPU";
  if (device.is_sim()) return "simulated accelerator";
  require_device(device);
#if COURSE_WITH_CUDA
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index));
  return prop.name;
#else
  return "GPU";
#endif
}

int compute_capability(Device device) {
  if (!device.is_cuda()) return 0;
  require_device(device);
#if COURSE_WITH_CUDA
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index));
  return 10 * prop.major + prop.minor;
#else
  return 0;
#endif
}

std::string tensor_core_types(int capability) {
  if (capability >= 100) return "tf32, bf16, f16, fp8, fp4";
  if (capability >= 89) return "tf32, bf16, f16, fp8";
  if (capability >= 80) return "tf32, bf16, f16";
  if (capability >= 70) return "f16";
  return "none";
}

DType fastest_amp_dtype(Device device) {
  const int capability = compute_capability(device);
  return capability > 0 && capability < 80 ? DType::kF16 : DType::kBF16;
}

Device default_device() {
  if (cuda_device_count() > 0) return Device::cuda(0);
  static std::once_flag said;
  std::call_once(said, [] {
    if (cuda_compiled())
      std::fprintf(stderr, "note: %s; running on the CPU\n", cuda_status().c_str());
  });
  return Device::cpu();
}

Device named_or_default_device(const DeviceRequest& request) {
  return request.named ? *request.named : default_device();
}

void require_device(Device device) {
  if (device.is_cpu()) return;
  if (device.is_sim()) {
    COURSE_CHECK(device.index >= 0 && device.index < kSimDevices, "device ", device.str(),
                 " requested, but the simulated accelerators are sim:0 to sim:", kSimDevices - 1);
    return;
  }
  COURSE_CHECK(cuda_device_count() > 0, "device ", device.str(), " requested, but ", cuda_status());
  COURSE_CHECK(device.index < cuda_device_count(), "device ", device.str(), " requested, but only ",
               cuda_device_count(), " GPU(s) are visible");
}

namespace {
// The GPU this thread made current through set_current_device (-1: none yet), so that a launch
// on the current GPU costs no cudaSetDevice.
thread_local int current_gpu = -1;
}  // namespace

void set_current_device(Device device) {
  if (!device.is_cuda() || device.index == current_gpu) return;
  require_device(device);
#if COURSE_WITH_CUDA
  CUDA_CHECK(cudaSetDevice(device.index));
#endif
  current_gpu = device.index;
}

namespace {
// The process's device, packed as kind * 1024 + index (one atomic word: read by every thread).
std::atomic<int> process_device_code{0};
}  // namespace

void set_process_device(Device device) {
  require_device(device);
  set_current_device(device);
  process_device_code = static_cast<int>(device.kind) * 1024 + device.index;
}

Device process_device() {
  const int code = process_device_code;
  return {static_cast<DeviceKind>(code / 1024), code % 1024};
}

void enter_process_device() { set_current_device(process_device()); }

}  // namespace course
