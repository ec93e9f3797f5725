// Signal handlers that only record the signal.
#include "common/train/stop_signal.h"

#include <csignal>

namespace course::train {

namespace {

volatile std::sig_atomic_t received = 0;

void record(int signal) { received = signal; }

}  // namespace

void install_stop_handlers() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = record;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGUSR1, SIGTERM}) {
    COURSE_CHECK(sigaction(signal, &action, nullptr) == 0, "cannot install the handler of signal ",
                 signal);
  }
}

int stop_signal() { return received; }

void stop_training(int signal, int64_t step, const std::string& checkpoint) {
  const std::string name = signal == SIGUSR1 ? "SIGUSR1" : signal == SIGTERM ? "SIGTERM" : "signal";
  if (checkpoint.empty()) {
    throw PreemptedError(name + " after step " + std::to_string(step) +
                         "; no --chkpt was given, so this run's progress is lost");
  }
  throw PreemptedError(name + " after step " + std::to_string(step) + ": checkpoint written to " +
                       checkpoint + "; continue with --resume " + checkpoint);
}

}  // namespace course::train
