// Exit codes of the labs.
#include "common/train/lab_main.h"

#include <cstdio>

#include "common/core/exercise.h"
#include "common/core/exit_codes.h"
#include "common/train/stop_signal.h"

namespace course::train {

int lab_main(const std::function<void()>& run) {
  try {
    install_stop_handlers();
    run();
  } catch (const ExerciseNotDone& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitExerciseNotDone;
  } catch (const OutOfMemoryError& e) {
    std::fprintf(stderr, "OOM: %s\n", e.what());
    return kExitOutOfMemory;
  } catch (const PreemptedError& e) {
    std::fprintf(stderr, "preempted: %s\n", e.what());
    return kExitPreempted;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitError;
  } catch (const std::exception& e) {  // from the standard library (a file system's refusal)
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitError;
  }
  return kExitDone;
}

}  // namespace course::train
