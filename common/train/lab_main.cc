// Exit codes of the labs.
#include "common/train/lab_main.h"

#include <cstdio>

#include "common/core/exercise.h"

namespace course::train {

int lab_main(const std::function<void()>& run) {
  try {
    run();
  } catch (const ExerciseNotDone& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const OutOfMemoryError& e) {
    std::fprintf(stderr, "OOM: %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace course::train
