// The world communicator of a multi-rank test binary (mpi_gtest_main.cc starts it): the tests'
// shorthand, world()->rank().
#pragma once

#include <memory>
#include <vector>

#include "common/parallel/comm/communicator.h"

namespace course::testing {

inline std::shared_ptr<parallel::Communicator> world() { return parallel::Communicator::world(); }

// This rank's simulated accelerator (sim:local rank, as GPU ranks take theirs), made the world's
// device: a check's collectives on it then follow a GPU's rules (an operation's tensors all on the
// rank's device or all on the CPU), so a buffer made on the wrong device fails as over NCCL.
inline Device rank_sim_device() {
  const Device device = Device::sim(world()->local_rank());
  world()->use_device(device);
  return device;
}

// The devices a multi-rank check runs its cases on: the CPU, then the rank's simulated
// accelerator.
inline std::vector<Device> check_devices() { return {Device::cpu(), rank_sim_device()}; }

}  // namespace course::testing
