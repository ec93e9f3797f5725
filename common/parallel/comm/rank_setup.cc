// Per-rank device, threads and the agreed stop.
#include "common/parallel/comm/rank_setup.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace course::parallel {

Device choose_rank_device(const DeviceRequest& requested, int local_rank, int gpus) {
  if (!requested.named) return gpus > 0 ? Device::cuda(local_rank % gpus) : default_device();
  if (!requested.per_rank) return *requested.named;
  if (requested.named->is_sim()) return Device::sim(local_rank % kSimDevices);
  COURSE_CHECK(gpus > 0, "--device cuda requested, but ", cuda_status());
  return Device::cuda(local_rank % gpus);
}

Device rank_device(const DeviceRequest& requested, Communicator& comm) {
  const Device device = choose_rank_device(requested, comm.local_rank(), cuda_device_count());
  require_device(device);
  set_process_device(device);
  if (device.is_accelerator()) comm.use_device(device);
  return device;
}

void share_cores(const Communicator& comm) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, cores / comm.local_size()));
}

Device set_up_rank(Communicator& comm, double timeout_seconds,
                   const DeviceRequest& requested_device) {
  comm.set_timeout(timeout_seconds);
  share_cores(comm);
  return rank_device(requested_device, comm);
}

int agree_on_stop(int local_signal, Communicator& comm) {
  if (comm.size() == 1) return local_signal;
  Tensor signal = Tensor::from_vector<int32_t>({local_signal}, {1});
  comm.allreduce(signal, ReduceOp::kMax)->wait();
  return signal.to_vector<int32_t>()[0];
}

}  // namespace course::parallel
