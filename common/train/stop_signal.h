// Preemption-safe training: Slurm signals a job before its time limit (#SBATCH
// --signal=USR1@120) and sends SIGTERM at the limit, on scancel and on preemption. With the
// handlers installed, either signal only records itself; the training loop looks between
// steps, writes its checkpoint and throws PreemptedError, which the lab turns into exit code 4
// (common/core/exit_codes.h) so the job script can requeue it.
#pragma once

#include <cstdint>
#include <string>

#include "common/core/error.h"

namespace course::train {

class PreemptedError : public Error {
 public:
  using Error::Error;
};

// Installs the SIGUSR1 and SIGTERM handlers and forgets any signal received before.
void install_stop_handlers();

// The stop signal received since install_stop_handlers() (SIGUSR1 or SIGTERM), or 0.
int stop_signal();

// Throws the PreemptedError of a run stopped by `signal` after `step` steps, its checkpoint
// written to `checkpoint` (empty: none was asked for, and the progress is lost).
[[noreturn]] void stop_training(int signal, int64_t step, const std::string& checkpoint);

}  // namespace course::train
