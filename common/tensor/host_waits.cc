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

}  // namespace course
