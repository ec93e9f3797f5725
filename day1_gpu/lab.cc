// `bazel run //day1_gpu:lab -- [flags]`: the day-1 lab (see day1_gpu/README.md). The same
// program is built with the trainee's exercises (//day1_gpu:lab) and with the solutions
// (//solutions/day1_gpu:lab).
#include "common/train/lab_main.h"
#include "day1_gpu/trainer.h"

int main(int argc, char** argv) {
  const day1::LabOptions options = day1::parse_options(argc, argv);
  return course::train::lab_main([&] { day1::run_lab(options); });
}
