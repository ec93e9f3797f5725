// The launcher's rank of this process, and errors every rank meets alike (launch_rank.h).
#include "common/core/launch_rank.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace course {

namespace {
std::atomic<bool> alike{false};
}  // namespace

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

void check_alike_on_every_rank(const std::function<void()>& check) {
  try {
    check();
  } catch (...) {
    alike = true;
    throw;
  }
}

bool error_alike_on_every_rank() { return alike; }

void yield_the_message_to_rank_zero() { std::this_thread::sleep_for(std::chrono::seconds(1)); }

}  // namespace course
