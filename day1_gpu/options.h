// The day-1 lab's command line, with the course script's flag names and defaults (except the
// image size and model, which default to the embedded Fashion-MNIST and the small network).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/tensor/tensor.h"

namespace day1 {

struct LabOptions {
  int64_t batch_size = 128;
  int64_t image_size = 28;
  int64_t epochs = 1;
  float lr = 0.1f;
  float wd = 0.0f;
  float mom = 0.9f;
  float label_smoothing = 0.1f;
  bool test = false;  // run --test-nsteps steps, report speed, skip validation
  int64_t test_nsteps = 50;
  bool amp = false;
  course::DType amp_dtype = course::DType::kBF16;
  bool channels_last = false;
  std::string chkpt;    // save a checkpoint here after every epoch (and at the end of --test)
  std::string resume;   // continue from this checkpoint
  std::string profile;  // write a Chrome trace of the profiled steps here
  std::string metrics;  // append JSON lines here
  std::string device;   // "cpu", "cuda", "cuda:N"; empty: the GPU if one is visible
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t synthetic = 0;  // > 0: that many random images instead of the dataset
  std::string model = "smallnet";
  int64_t max_memory_mb = 0;  // > 0: cap the device allocator (to study out-of-memory)
  uint32_t seed = 0;
  bool progress = true;
  bool model_memory = false;  // print the model's own memory (TP1.5)
};

// Parses argv; on --help prints the usage and exits 0, on bad flags prints one message and
// exits 1 (CLI11's behaviour, kept for every lab).
LabOptions parse_options(int argc, char** argv);

// Checks value ranges that flags alone cannot (throws course::Error).
void validate(const LabOptions& options);

}  // namespace day1
