// The day-1 lab's command line: the shared training flags (common/train/lab_flags.h) plus the
// day's own.
#pragma once

#include <cstdint>

#include "common/train/lab_flags.h"

namespace day1 {

struct LabOptions : course::train::TrainingFlags {
  int64_t max_memory_mb = 0;  // > 0: cap the device allocator (to study out-of-memory)
  bool model_memory = false;  // print the model's own memory (TP1.5)
  bool cuda_graphs = false;   // replay the training step as a captured graph
};

// Parses argv; on --help prints the usage and exits 0, on bad flags prints one message and
// exits non-zero.
LabOptions parse_options(int argc, char** argv);

// Whether batches reach the device through the trainee's to_device (TP1.1): when --device names
// a GPU or the simulated accelerator (sim), the exercise's feature. Otherwise (the CPU, or a GPU
// the lab chose because one is visible) the course's copy (common/data/device_batches.h) moves
// them, so the quick start's baseline never waits for an unfinished exercise.
bool copies_with_to_device(const LabOptions& options);

// Checks value ranges that flags alone cannot (throws course::Error).
void validate(const LabOptions& options);

}  // namespace day1
