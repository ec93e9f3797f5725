// What each rank of a job decides for itself, the same way in every lab: its device (the GPU
// of its local rank when GPUs are visible), its share of the node's CPU cores, and the stop
// decision all ranks agree on (a preemption signal seen by any rank stops every rank after the
// same step, so their checkpoints match).
#pragma once

#include <string>

#include "common/parallel/communicator.h"

namespace course::parallel {

// `requested` ("cpu", "cuda", "cuda:N") when given; else GPU local_rank % GPUs, or the CPU.
// Throws when the requested device is not there.
Device rank_device(const std::string& requested, const Communicator& comm);

// OpenMP threads: the node's cores divided among its ranks, unless OMP_NUM_THREADS is set.
void share_cores(const Communicator& comm);

// The largest of every rank's `local_signal` (0: none): the signal every rank acts on.
int agree_on_stop(int local_signal, Communicator& comm);

}  // namespace course::parallel
