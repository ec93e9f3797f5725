// This thread's host waits.
#include "common/tensor/host_waits.h"

namespace course {

namespace {
thread_local HostWaits waits;
}  // namespace

void note_host_read(Device device) { waits.reads += device.is_accelerator(); }
void note_host_synchronization(Device device) { waits.synchronizations += device.is_accelerator(); }
void note_host_copy(Device device) { waits.copies += device.is_accelerator(); }
HostWaits host_waits() { return waits; }

std::string HostWaits::str() const {
  const auto counted = [](int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return counted(reads, "read", "reads") + ", " +
         counted(synchronizations, "synchronisation", "synchronisations") + ", " +
         counted(copies, "copy", "copies");
}

}  // namespace course
