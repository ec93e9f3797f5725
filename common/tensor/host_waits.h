// Counting the places where the host waits for the device: a tensor's values read on the host
// (to_vector, a reduction whose result comes back), and a stream or event synchronised. On the
// GPU each stalls the host until the queued work is done and leaves the GPU idle while the host
// catches up, so a training step should have none except every N steps (--log-every). The
// same calls run on the CPU path, so the counts there are the GPU's: tests check the step's
// waits on any machine. Counted per thread (the loader's workers read host data of their own).
#pragma once

#include <cstdint>

namespace course {

struct HostWaits {
  int64_t reads = 0;             // values copied to the host
  int64_t synchronizations = 0;  // Stream::synchronize, Event::synchronize
};

void note_host_read();
void note_host_synchronization();
HostWaits host_waits();  // this thread's, since it started

}  // namespace course
