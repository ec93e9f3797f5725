// Per-rank device, threads and the agreed stop.
#include "common/parallel/rank_setup.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace course::parallel {

Device rank_device(const std::string& requested, const Communicator& comm) {
  const int gpus = cuda_device_count();
  const Device device = !requested.empty() ? parse_device(requested)
                        : gpus > 0         ? Device::cuda(comm.local_rank() % gpus)
                                           : default_device();
  require_device(device);
  return device;
}

void share_cores(const Communicator& comm) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, cores / comm.local_size()));
}

int agree_on_stop(int local_signal, Communicator& comm) {
  if (comm.size() == 1) return local_signal;
  Tensor signal = Tensor::from_vector<int32_t>({local_signal}, {1});
  comm.allreduce(signal, ReduceOp::kMax)->wait();
  return signal.to_vector<int32_t>()[0];
}

}  // namespace course::parallel
