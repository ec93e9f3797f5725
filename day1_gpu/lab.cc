// `bazel run //day1_gpu:lab -- [flags]`: the day-1 lab (see day1_gpu/README.md). The same
// program is built with the trainee's exercises (//day1_gpu:lab) and with the solutions
// (//solutions/day1_gpu:lab).
#include <cstdio>

#include "common/core/exercise.h"
#include "day1_gpu/trainer.h"

int main(int argc, char** argv) {
  const day1::LabOptions options = day1::parse_options(argc, argv);
  try {
    day1::run_lab(options);
  } catch (const course::ExerciseNotDone& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const course::OutOfMemoryError& e) {
    std::fprintf(stderr, "OOM: %s\n", e.what());
    return 2;
  } catch (const course::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
