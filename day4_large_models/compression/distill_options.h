// The command line of `compress distill`: the student's training flags (the shared lab flags,
// --model defaulting to tinynet) and the teacher's checkpoint, model, temperature and weight.
#pragma once

#include <string>

#include "common/train/lab_flags.h"

namespace day4 {

struct DistillOptions : course::train::TrainingFlags {
  DistillOptions() { model = "tinynet"; }
  std::string teacher;  // a checkpoint of a lab's --chkpt (day 1, day 3)
  std::string teacher_model = "smallnet";
  float temperature = 4;
  float alpha = 0.9f;     // the soft term's weight; 1 - alpha the labels'
  bool baseline = false;  // also train the student from the labels alone, for the comparison
};

void add_distill_flags(CLI::App& app, DistillOptions& options);

// Value ranges flags alone cannot check (throws course::Error).
void validate(const DistillOptions& options);

}  // namespace day4
