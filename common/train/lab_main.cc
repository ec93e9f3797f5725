// Exit codes of the labs.
#include "common/train/lab_main.h"

#include <cstdio>

#include "common/core/exercise.h"
#include "common/core/exit_codes.h"
#include "common/core/launch_rank.h"
#include "common/train/stop_signal.h"

namespace course::train {

int lab_main(const std::function<void()>& run) {
  // An error every rank meets alike (a refused flag) is said by rank 0 only.
  const auto say = [](const char* prefix, const char* what) {
    if (!error_alike_on_every_rank() || prints_shared_messages()) {
      std::fprintf(stderr, "%s%s\n", prefix, what);
    } else {
      yield_the_message_to_rank_zero();
    }
  };
  try {
    install_stop_handlers();
    run();
  } catch (const ExerciseNotDone& e) {
    say("", e.what());
    return kExitExerciseNotDone;
  } catch (const OutOfMemoryError& e) {
    say("OOM: ", e.what());
    return kExitOutOfMemory;
  } catch (const PreemptedError& e) {
    say("preempted: ", e.what());
    return kExitPreempted;
  } catch (const Error& e) {
    say("error: ", e.what());
    return kExitError;
  } catch (const std::exception& e) {  // from the standard library (a file system's refusal)
    say("error: ", e.what());
    return kExitError;
  }
  return kExitDone;
}

}  // namespace course::train
