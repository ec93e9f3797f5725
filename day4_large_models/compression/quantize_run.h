// `bazel run //day4_large_models:compress -- quantize`: post-training int8 quantization of a
// trained network. The network (a lab's checkpoint) is folded and fused into an f32 inference
// network (day4_large_models/compression/inference_network.h), its layers' inputs are observed on a
// few training batches, and an int8 network is built per calibration method with TP4.20's
// per-channel weights. Each network's test accuracy and inference speed (median pass over the
// calibration batches, measured side by side in this run) go into one table.
#pragma once

#include <string>
#include <vector>

#include "day4_large_models/compression/quantize_options.h"

namespace day4 {

struct QuantizeRow {
  std::string network;
  double accuracy = 0;
  double images_per_second = 0;
};

// Prints the calibration and the table on stdout; the rows: f32 as trained, f32 folded and
// fused, then one int8 row per calibration method.
std::vector<QuantizeRow> run_quantization(const QuantizeOptions& options);

}  // namespace day4
