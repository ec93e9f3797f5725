// `bazel run //day4_large_models:compress -- distill`: knowledge distillation on the labs' data.
// A trained teacher (a lab's checkpoint, e.g. day 1's smallnet) is loaded and evaluated; a
// student a fraction of its size (tinynet) trains on the shared training loop from the
// teacher's softened outputs and the labels (TP4.19's loss); with --baseline the same student
// first trains from the labels alone, and a table compares the three.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "day4_large_models/compression/distill_options.h"

namespace day4 {

struct DistillReport {
  int64_t teacher_parameters = 0, student_parameters = 0;
  double teacher_accuracy = 0;
  std::optional<double> baseline_accuracy;   // with --baseline
  std::optional<double> distilled_accuracy;  // not with --test
};

// Prints the teacher's figures, the runs' progress and the comparison on stdout.
DistillReport run_distillation(const DistillOptions& options);

}  // namespace day4
