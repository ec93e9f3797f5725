// Preemption-safe training: Slurm signals a job before its time limit (#SBATCH
// --signal=USR1@120) and sends SIGTERM at the limit, on scancel and on preemption. With the
// handlers installed, either signal only records itself; the training loop looks between
// steps, writes its checkpoint and throws PreemptedError, which the lab turns into exit code 4
// (common/core/exit_codes.h) so the job script can requeue it.
//
// The signals are taken by one watcher thread (sigwait), never by a compute thread: the kernel
// writes a signal frame below the interrupted thread's stack pointer, and oneDNN's JIT kernels
// may point it into their own heap buffers, so a handler run there corrupts the heap.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/error.h"

namespace course::train {

class PreemptedError : public Error {
 public:
  using Error::Error;
};

// Blocks SIGUSR1 and SIGTERM in the calling thread and OpenMP's pool (threads started later
// inherit that), starts the watcher thread once, and forgets any signal received before. Call it
// before the run starts other threads (MPI, the data loader): a thread started earlier keeps the
// signals unblocked and only records them, in a handler run on its own stack.
void install_stop_handlers();

// The stop signal received since install_stop_handlers() (SIGUSR1 or SIGTERM), or 0.
int stop_signal();

// Sends `signal` to this process, as Slurm does, and returns once it has been recorded.
void send_stop_signal(int signal);

// Throws the PreemptedError of a run stopped by `signal` after `step` steps, its checkpoint
// written to `checkpoint` (empty: none was asked for, and the progress is lost).
[[noreturn]] void stop_training(int signal, int64_t step, const std::string& checkpoint);

}  // namespace course::train
