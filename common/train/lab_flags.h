// The training flags every lab shares, with the course script's names and defaults (except
// the image size and model, which default to the embedded Fashion-MNIST and the small
// network). Each lab adds its own flags to the same CLI11 app.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/data/fashion_mnist.h"

namespace course::train {

struct TrainingFlags {
  int64_t batch_size = 128;  // per rank
  int64_t image_size = 28;
  int64_t epochs = 1;
  float lr = 0.1f;
  float wd = 0.0f;
  float mom = 0.9f;
  float label_smoothing = 0.1f;
  bool test = false;  // run --test-nsteps steps, report speed, skip validation
  int64_t test_nsteps = 50;
  bool amp = false;
  DType amp_dtype = DType::kBF16;
  bool channels_last = false;
  std::string chkpt;    // checkpoint written after every epoch (and at the end of --test)
  std::string resume;   // continue from this checkpoint
  std::string profile;  // Chrome trace of the profiled steps
  std::string metrics;  // JSON lines appended per epoch
  std::string device;   // "cpu", "cuda", "cuda:N"; empty: the GPU if one is visible
  std::string data_dir = kFashionMnistDir;
  int64_t synthetic = 0;  // > 0: that many random images instead of the dataset
  std::string model = "smallnet";
  uint32_t seed = 0;
  bool progress = true;
};

void add_training_flags(CLI::App& app, TrainingFlags& flags);

// Parses argv; --help prints the usage and exits 0, a bad flag prints one message and exits
// non-zero (CLI11's behaviour, the same in every lab).
void parse_or_exit(CLI::App& app, int argc, char** argv);

// The lab's labelled images: with --synthetic N, N random 28x28 images for training and N / 5
// for testing; otherwise Fashion-MNIST from --data-dir.
LabelledImages lab_images(const TrainingFlags& flags, Split split);

// Checks what flags alone cannot (value ranges, the model's smallest image); throws Error.
void validate_training_flags(const TrainingFlags& flags);

}  // namespace course::train
