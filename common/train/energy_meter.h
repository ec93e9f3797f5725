// What a run consumed, as an HPC centre accounts for it: CPU package energy from RAPL
// (/sys/class/powercap's intel-rapl packages, where the kernel lets it be read), GPU energy from
// NVML (the driver's counter of the GPU the process uses, where a GPU and the library are
// present), and always core-hours and GPU-hours (wall time x the cores and GPUs the process
// holds). A source that cannot be read is named once in the summary, never an error.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor/device.h"

namespace course::train {

struct EnergyReading {
  std::optional<double> cpu_joules;  // the node's CPU packages (RAPL)
  std::optional<double> gpu_joules;  // the process's GPU (NVML)
  double core_hours = 0, gpu_hours = 0;
};

struct EnergySources {
  std::string powercap = "/sys/class/powercap";  // RAPL's folder (tests use a copy)
  Device device = Device::cpu();                 // a GPU is read through NVML
  int cores = 1;                                 // the process's compute threads
};

class EnergyMeter {
 public:
  // Starts counting now.
  explicit EnergyMeter(const EnergySources& sources);
  ~EnergyMeter();
  EnergyMeter(const EnergyMeter&) = delete;
  EnergyMeter& operator=(const EnergyMeter&) = delete;

  // Since construction. RAPL's counters wrap around (every 20 minutes or so at 200 W): read at
  // least that often (the training loop reads at every loss read and epoch end).
  EnergyReading read();
  // Why a source is not measured ("CPU energy: /sys/class/powercap has no RAPL package"),
  // each once.
  const std::vector<std::string>& unmeasured() const { return unmeasured_; }

 private:
  struct Package {
    std::string energy_file;
    double range_uj = 0;  // the counter wraps around here
    double last_uj = 0;   // at the last read
    double total_uj = 0;  // since construction
  };
  std::vector<Package> packages_;
  struct Nvml;
  Nvml* nvml_ = nullptr;  // the library and the GPU's counter at the start; none: unmeasured
  EnergySources sources_;
  std::chrono::steady_clock::time_point started_;
  std::vector<std::string> unmeasured_;
};

// NVML numbers every GPU of the node; CUDA numbers the visible ones (CUDA_VISIBLE_DEVICES, as
// Slurm sets it: indices or UUIDs). How NVML names CUDA device `cuda_index`: an index, or a UUID
// ("GPU-..."/"MIG-..."); none when the list has no such entry.
struct NvmlDevice {
  bool by_uuid = false;
  std::string id;  // the index's digits, or the UUID
};
std::optional<NvmlDevice> nvml_device_of(int cuda_index, const char* visible_devices);

// "energy: CPU packages 1,234 J, GPU 5,678 J; 0.012 core-hours, 0.003 GPU-hours", with
// "not measured" for a source without a reading.
std::string describe_energy(const EnergyReading& reading);

}  // namespace course::train
