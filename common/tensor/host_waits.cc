// This thread's host waits.
#include "common/tensor/host_waits.h"

namespace course {

namespace {
thread_local HostWaits waits;
}  // namespace

void note_host_read() { ++waits.reads; }
void note_host_synchronization() { ++waits.synchronizations; }
HostWaits host_waits() { return waits; }

}  // namespace course
