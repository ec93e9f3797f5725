// Devices (the CPU, or one CUDA GPU) and what this build and machine can run.
//
// A build compiled with CUDA still runs where no GPU is visible: default_device() then falls
// back to the CPU and says so once. Asking for a GPU explicitly where none is visible is a
// user error with a clear message.
#pragma once

#include <string>
#include <string_view>

namespace course {

enum class DeviceKind { kCPU, kCUDA };

struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::kCUDA, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCPU; }
  bool is_cuda() const { return kind == DeviceKind::kCUDA; }
  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device&) const = default;
};

Device parse_device(std::string_view text);  // "cpu", "cuda", "cuda:N"; throws otherwise

bool cuda_compiled();       // was this binary built with CUDA?
int cuda_device_count();    // GPUs visible to this process (0 without CUDA or a driver)
std::string cuda_status();  // one line: why GPUs are or are not usable

// The GPU when one is visible, else the CPU (printing once why it falls back).
Device default_device();

// Throws course::Error when `device` cannot be used by this build on this machine.
void require_device(Device device);

// Makes `device` current for the calling thread (cudaSetDevice); no-op for the CPU.
void set_current_device(Device device);

// The device this process trains on (a rank's GPU: its local rank's), made current in the
// calling thread. Set it at setup, before any other CUDA call, so that no rank opens a context
// on GPU 0 by accident (parallel::rank_device does; a pinned allocation would otherwise
// create one on whichever GPU is current). The CPU until set.
void set_process_device(Device device);
Device process_device();
// Makes the process's GPU current in the calling thread: every thread that calls CUDA (the
// DataLoader's workers, the pinned allocator) calls it first, since the current device is per
// thread. No-op while the process trains on the CPU.
void enter_process_device();

}  // namespace course
