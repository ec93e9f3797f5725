// Command line of the day-1 lab.
#include "day1_gpu/options.h"

namespace day1 {

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 1: train a network on the CPU or the GPU, with mixed precision (--amp, TP1.2), "
      "channels-last (TP1.3) and a profiler (--profile, TP1.4)");
  course::train::add_training_flags(app, o);
  app.add_option("--max-memory-mb", o.max_memory_mb, "cap the device memory (0: no cap)");
  app.add_flag("--model-memory", o.model_memory,
               "print the memory of parameters, gradients and optimizer state (TP1.5)");
  course::train::parse_or_exit(app, argc, argv);
  return o;
}

void validate(const LabOptions& o) {
  course::train::validate_training_flags(o);
  COURSE_CHECK(o.max_memory_mb >= 0, "--max-memory-mb must not be negative");
}

}  // namespace day1
