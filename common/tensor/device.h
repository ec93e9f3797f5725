// Devices (the CPU, one CUDA GPU, or one simulated accelerator) and what this build and machine
// can run.
//
// A build compiled with CUDA still runs where no GPU is visible: default_device() then falls
// back to the CPU and says so once. Asking for a GPU explicitly where none is visible is a
// user error with a clear message.
//
// The simulated accelerator (`sim:N`, kSimDevices of them on every machine) is how CI sees
// what only a GPU would show: its memory is host memory but it is not the CPU. It has its own
// caching allocator; a tensor on it and one on the CPU are different devices to every check, a
// move between it and the host is an explicit copy, and every blocking read, stream or event
// synchronisation and copy from pageable memory counts as a host wait (host_waits.h), as on a
// GPU. Its kernels are the CPU's (runs_host_kernels()), run at once; the communicator treats
// it as a GPU (one device per rank, device groups), over MPI.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/tensor/dtype.h"

namespace course {

enum class DeviceKind { kCPU, kCUDA, kSim };

inline constexpr int kSimDevices = 8;  // sim:0 .. sim:7, on any machine

struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::kCUDA, index}; }
  static Device sim(int index = 0) { return {DeviceKind::kSim, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCPU; }
  bool is_cuda() const { return kind == DeviceKind::kCUDA; }
  bool is_sim() const { return kind == DeviceKind::kSim; }
  // Memory apart from the host's (a GPU, or the simulated accelerator): reaching it from the
  // host is a copy, and the host waits for it.
  bool is_accelerator() const { return kind != DeviceKind::kCPU; }
  // Its kernels run on the host's cores (the CPU, and the simulated accelerator).
  bool runs_host_kernels() const { return kind != DeviceKind::kCUDA; }
  std::string str() const;  // "cpu", "cuda:0", "sim:0"
  bool operator==(const Device&) const = default;
};

// "cpu", "cuda", "cuda:N", "sim", "sim:N"; throws otherwise.
Device parse_device(std::string_view text);

// What a --device flag asks for, parsed once where the flags are: nothing (the GPU when one is
// visible, else the CPU), one device ("cpu", "cuda:1"), or an accelerator's kind without an
// index ("cuda", "sim"), which gives each rank of a node its own (by local rank) and one
// process the first.
struct DeviceRequest {
  std::optional<Device> named;  // unset: the default
  bool per_rank = false;        // named without an index: each rank its own of that kind
};
// "" (the default) or what parse_device takes; throws otherwise.
DeviceRequest parse_device_request(std::string_view text);

bool cuda_compiled();       // was this binary built with CUDA?
int cuda_device_count();    // GPUs visible to this process (0 without CUDA or a driver)
std::string cuda_status();  // one line: why GPUs are or are not usable

// What `device` is: the GPU's model ("NVIDIA H200"), "simulated accelerator" or "CPU".
std::string device_model(Device device);

// A GPU's compute capability as its architecture's number (80 for sm_80); 0 for the CPU and the
// simulated device.
int compute_capability(Device device);
// The types a GPU of `capability` multiplies on tensor cores ("tf32, bf16, f16, fp8"; "f16" on a
// V100, "none" before Volta).
std::string tensor_core_types(int capability);
// --amp's type on `device` when --amp-dtype is not given: bf16 where the GPU has bf16 tensor
// cores (sm_80 and later) and on the CPU and the simulated device, f16 with the loss scaler on
// the GPUs before (a V100's or a T4's tensor cores have f16 only).
DType fastest_amp_dtype(Device device);

// The GPU when one is visible, else the CPU (printing once why it falls back).
Device default_device();

// One process's device: the one the request names, or default_device() when none is named.
Device named_or_default_device(const DeviceRequest& request);

// Throws course::Error when `device` cannot be used by this build on this machine.
void require_device(Device device);

// Makes `device` current for the calling thread (cudaSetDevice, only when another GPU is
// current in it); no-op for the CPU and the simulated accelerator.
void set_current_device(Device device);

// The device this process trains on (a rank's GPU: its local rank's), made current in the
// calling thread. Set it at setup, before any other CUDA call, so that no rank opens a context
// on GPU 0 by accident (parallel::rank_device does; a pinned allocation would otherwise
// create one on whichever GPU is current). The CPU until set; a simulated device too.
void set_process_device(Device device);
Device process_device();
// Makes the process's GPU current in the calling thread: every thread that calls CUDA (the
// DataLoader's workers, the pinned allocator) calls it first, since the current device is per
// thread. No-op while the process trains on the CPU.
void enter_process_device();

}  // namespace course
