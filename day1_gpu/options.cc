// Command line of the day-1 lab.
#include "day1_gpu/options.h"

#include <CLI/CLI.hpp>

#include "common/tensor/device.h"

namespace day1 {

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 1: train a network on the CPU or the GPU, with mixed precision (--amp, TP1.2), "
      "channels-last (TP1.3), a profiler (--profile, TP1.4) and CUDA graphs (--cuda-graphs)");
  course::train::add_training_flags(app, o);
  course::train::add_step_flags(app, o);
  app.add_option("--max-memory-mb", o.max_memory_mb, "cap the device memory (0: no cap)");
  app.add_flag("--model-memory", o.model_memory,
               "print the memory of parameters, gradients and optimizer state (TP1.5)");
  app.add_flag("--cuda-graphs", o.cuda_graphs,
               "capture forward, backward and update in a CUDA graph once, then replay it (needs "
               "a GPU; on the CPU a recorded task graph stands in)");
  course::train::parse_or_exit(app, argc, argv);
  return o;
}

bool copies_with_to_device(const LabOptions& o) {
  return o.device.named && o.device.named->is_accelerator();
}

void validate(const LabOptions& o) {
  course::train::validate_training_flags(o);
  COURSE_CHECK(o.max_memory_mb >= 0, "--max-memory-mb must not be negative");
  COURSE_CHECK(!(o.cuda_graphs && o.clip_grad_norm),
               "--cuda-graphs does not take --clip-grad-norm: the clip logs each step's norm in "
               "a slot the host picks, which a replay would not move on");
}

}  // namespace day1
