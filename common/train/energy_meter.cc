// RAPL's counters read from sysfs, NVML's through the driver's library opened at run time (a
// machine without a GPU driver runs the same binary), and the hours from the wall clock.
#include "common/train/energy_meter.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace course::train {

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

std::optional<double> read_number(const std::string& path) {
  std::ifstream in(path);
  double value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

std::string format_joules(std::optional<double> joules, const char* what) {
  if (!joules) return std::string(what) + " not measured";
  char text[64];
  std::snprintf(text, sizeof text, "%s %.0f J", what, *joules);
  return text;
}

}  // namespace

// NVML's entry points (nvml.h's signatures), looked up in libnvidia-ml.so.1.
struct EnergyMeter::Nvml {
  void* library = nullptr;
  void* device = nullptr;
  int (*total_energy)(void* device, unsigned long long* millijoules) = nullptr;
  unsigned long long start_mj = 0;

  std::optional<double> millijoules() const {
    unsigned long long now = 0;
    if (total_energy(device, &now) != 0) return std::nullopt;
    return static_cast<double>(now);
  }
};

std::optional<NvmlDevice> nvml_device_of(int cuda_index, const char* visible_devices) {
  if (visible_devices == nullptr || *visible_devices == '\0') {
    return NvmlDevice{.id = std::to_string(cuda_index)};
  }
  std::vector<std::string> listed;
  std::stringstream list(visible_devices);
  for (std::string entry; std::getline(list, entry, ',');) listed.push_back(entry);
  if (cuda_index < 0 || cuda_index >= static_cast<int>(listed.size())) return std::nullopt;
  const std::string& entry = listed[cuda_index];
  return NvmlDevice{.by_uuid = !all_digits(entry), .id = entry};
}

EnergyMeter::EnergyMeter(const EnergySources& sources)
    : sources_(sources), started_(std::chrono::steady_clock::now()) {
  namespace fs = std::filesystem;
  std::error_code error;
  const std::string package = "intel-rapl:";  // then digits: a package, not one of its zones
  for (const auto& entry : fs::directory_iterator(sources.powercap, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(package) || !all_digits(name.substr(package.size()))) continue;
    const std::string file = (entry.path() / "energy_uj").string();
    const std::optional<double> start = read_number(file);
    const std::optional<double> range =
        read_number((entry.path() / "max_energy_range_uj").string());
    if (start && range)
      packages_.push_back({.energy_file = file, .range_uj = *range, .last_uj = *start});
  }
  if (packages_.empty()) {
    unmeasured_.push_back("CPU energy: " + sources.powercap +
                          " has no readable RAPL package (energy_uj)");
  }
  if (!sources.device.is_cuda()) return;
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  const auto symbol = [&](const char* name) { return library ? dlsym(library, name) : nullptr; };
  const auto init = reinterpret_cast<int (*)()>(symbol("nvmlInit_v2"));
  const auto handle_by_index =
      reinterpret_cast<int (*)(unsigned, void**)>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  const auto handle_by_uuid =
      reinterpret_cast<int (*)(const char*, void**)>(symbol("nvmlDeviceGetHandleByUUID"));
  const std::optional<NvmlDevice> gpu =
      nvml_device_of(sources.device.index, std::getenv("CUDA_VISIBLE_DEVICES"));
  const auto find_handle = [&](void** handle) {
    if (!gpu) return false;
    if (gpu->by_uuid) return handle_by_uuid && handle_by_uuid(gpu->id.c_str(), handle) == 0;
    return handle_by_index && handle_by_index(std::stoul(gpu->id), handle) == 0;
  };
  Nvml nvml{.library = library,
            .total_energy = reinterpret_cast<int (*)(void*, unsigned long long*)>(
                symbol("nvmlDeviceGetTotalEnergyConsumption"))};
  if (init && nvml.total_energy && init() == 0 && find_handle(&nvml.device) &&
      nvml.total_energy(nvml.device, &nvml.start_mj) == 0) {
    nvml_ = new Nvml(nvml);
    return;
  }
  if (library) dlclose(library);
  unmeasured_.push_back(library ? "GPU energy: NVML cannot read the GPU's energy counter"
                                : "GPU energy: no NVML library (libnvidia-ml.so.1)");
}

EnergyMeter::~EnergyMeter() {
  if (!nvml_) return;
  dlclose(nvml_->library);
  delete nvml_;
}

EnergyReading EnergyMeter::read() {
  EnergyReading reading;
  const double hours =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() / 3600;
  reading.core_hours = hours * sources_.cores;
  reading.gpu_hours = sources_.device.is_cuda() ? hours : 0;
  if (!packages_.empty()) {
    double microjoules = 0;
    for (Package& p : packages_) {
      const std::optional<double> now = read_number(p.energy_file);
      if (!now) return reading;
      // A smaller reading than the last went round the counter's range once.
      p.total_uj += *now >= p.last_uj ? *now - p.last_uj : *now + p.range_uj - p.last_uj;
      p.last_uj = *now;
      microjoules += p.total_uj;
    }
    reading.cpu_joules = microjoules / 1e6;
  }
  if (nvml_) {
    if (const std::optional<double> now = nvml_->millijoules()) {
      reading.gpu_joules = (*now - static_cast<double>(nvml_->start_mj)) / 1e3;
    }
  }
  return reading;
}

std::string describe_energy(const EnergyReading& r) {
  char hours[96];
  std::snprintf(hours, sizeof hours, "; %.4g core-hours, %.4g GPU-hours", r.core_hours,
                r.gpu_hours);
  return "energy: " + format_joules(r.cpu_joules, "CPU packages") + ", " +
         format_joules(r.gpu_joules, "GPU") + hours;
}

}  // namespace course::train
