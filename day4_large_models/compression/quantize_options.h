// The command line of `compress quantize`: the trained network and its data, the evaluation
// batch, and the calibration (method, percentile, batches) of post-training int8 quantization.
#pragma once

#include <string>

#include "common/train/lab_flags.h"

namespace day4 {

struct QuantizeOptions : course::train::TrainingFlags {
  QuantizeOptions() { batch_size = 256; }
  std::string trained;               // a checkpoint of a lab's --chkpt
  std::string calibration = "both";  // minmax, percentile, or both (one int8 network each)
  double percentile = 99.99;         // of |x|, for percentile calibration
  int64_t calibration_batches = 8;   // training batches observed
  int64_t timing_passes = 5;         // over the calibration batches; the median pass counts
};

void add_quantize_flags(CLI::App& app, QuantizeOptions& options);

// Value ranges flags alone cannot check (throws course::Error).
void validate(const QuantizeOptions& options);

}  // namespace day4
