// The day-3 lab's command line: the shared training flags (common/train/lab_flags.h) plus the
// day's augmentation (the automatic policy and the jitter in the loader's workers or on the
// device, MixUp / CutMix of whole batches) and the epoch orders of the storage formats.
#pragma once

#include <string>

#include "common/data/augment_policy.h"
#include "common/data/batch_mix.h"
#include "common/data/jitter.h"
#include "common/train/lab_flags.h"

namespace day3 {

struct LabOptions : course::train::TrainingFlags {
  std::string auto_augment = "none";  // none, randaugment, trivialaugment
  int ra_n = 2, ra_m = 9;
  int translate = 0;
  float brightness = 0, contrast = 0;
  bool aug_device = false;  // flip and jitter on the device's batch, mixing there too
  float mixup = 0, cutmix = 0;
  std::string mix_mode = "batch";
  float mix_prob = 1, switch_prob = 0.5f;
  int64_t shuffle_buffer = 1000;  // tar shards: WebDataset's shuffle buffer, in samples
  int64_t pages_in_memory = 4;    // packed files: pages of the quasi-random order's groups

  course::AugmentPolicy policy() const;
  course::JitterOptions jitter() const;
  bool mixing() const { return mixup != 0 || cutmix != 0; }
  course::MixOptions mix_options() const;
};

// Parses argv; on --help prints the usage and exits 0, on bad flags prints one message and
// exits non-zero.
LabOptions parse_options(int argc, char** argv);

// Checks value ranges that flags alone cannot (throws course::Error).
void validate(const LabOptions& options);

}  // namespace day3
