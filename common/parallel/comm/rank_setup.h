// What each rank of a job decides for itself, the same way in every lab: its device (the GPU
// of its local rank when GPUs are visible), its share of the node's CPU cores, and the stop
// decision all ranks agree on (a preemption signal seen by any rank stops every rank after the
// same step, so their checkpoints match).
#pragma once

#include <string>

#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// The device of the rank of node-local index `local_rank` among `gpus` visible GPUs:
// `requested` "cpu", "cuda:N" or "sim:N" as named; "cuda" or nothing: GPU local_rank % gpus
// (nothing and no GPU: the CPU); "sim": the simulated accelerator sim:local_rank (device.h), as
// GPU ranks take theirs. Throws when "cuda" is asked for and no GPU is visible.
Device choose_rank_device(const DeviceRequest& requested, int local_rank, int gpus);

// This rank's device (choose_rank_device), made the process's device (current in every thread
// that calls CUDA, from this first call on) and the communicator's device (use_device: its
// NCCL communicator created when it is a GPU), all ranks together: call it on every rank at setup,
// before any dataset or pinned buffer is made). Throws when the device is not there.
Device rank_device(const DeviceRequest& requested, Communicator& comm);

// OpenMP threads: the node's cores divided among its ranks, unless OMP_NUM_THREADS is set.
void share_cores(const Communicator& comm);

// A rank's setup at a lab's start, the same on every day: the communicator's timeout (seconds a
// collective waits for the other ranks before the job fails), the rank's share of the node's
// cores, then its device (rank_device). Call it on every rank first, before any dataset or
// pinned buffer is made.
Device set_up_rank(Communicator& comm, double timeout_seconds,
                   const DeviceRequest& requested_device);

// The largest of every rank's `local_signal` (0: none): the signal every rank acts on.
int agree_on_stop(int local_signal, Communicator& comm);

}  // namespace course::parallel
