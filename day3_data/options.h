// The day-3 lab's command line: the shared training flags (common/train/lab_flags.h) plus the
// day's augmentation (the automatic policy and the jitter in the loader's workers or on the
// device, MixUp / CutMix of whole batches), the epoch orders of the storage formats, the
// optimizer and schedule, and the learning-rate finder.
#pragma once

#include <string>
#include <vector>

#include "common/data/augment_policy.h"
#include "common/data/batch_mix.h"
#include "common/data/jitter.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/train/lab_flags.h"

namespace day3 {

// --findlr-mode: one run whose rate rises every --findlr-steps steps, or a fresh model per rate.
enum class FindLrMode { kCorrelated, kDecorrelated };
const char* findlr_mode_name(FindLrMode mode);

struct LabOptions : course::train::TrainingFlags {
  course::AugmentPolicyKind auto_augment = course::AugmentPolicyKind::kNone;
  int ra_n = 2, ra_m = 9;
  int translate = 0;
  float brightness = 0, contrast = 0;
  bool aug_device = false;  // flip and jitter on the device's batch, mixing there too
  float mixup = 0, cutmix = 0;
  course::MixMode mix_mode = course::MixMode::kBatch;
  float mix_prob = 1, switch_prob = 0.5f;
  int64_t shuffle_buffer = 1000;  // tar shards: WebDataset's shuffle buffer, in samples
  int64_t pages_in_memory = 4;    // packed files: pages of the quasi-random order's groups
  double comm_timeout = 300;      // several ranks: seconds before a missing rank fails the others
  // The optimizer comparison: any optimizer under any schedule, with a warm-up.
  course::optim::OptimizerKind optimizer = course::optim::OptimizerKind::kSgd;
  std::optional<int64_t> freeze_step;  // the 1-bit optimizers' warm-up (unset: 100 steps)
  course::optim::ScheduleKind schedule = course::optim::ScheduleKind::kOneCycle;
  float cosine_floor = 0;  // cosine: down to this fraction of --lr (0.2: lr/5)
  double warmup_epochs = 0;
  // --findlr: a learning-rate sweep instead of training (day3_data/lr_finder.h).
  bool findlr = false;
  FindLrMode findlr_mode = FindLrMode::kCorrelated;
  float findlr_start = 1e-8f;  // the sweep goes from here up to --lr
  int64_t findlr_rates = 10, findlr_steps = 50;
  std::string findlr_plot = "findlr.png";  // and its table beside it, as .csv

  course::AugmentPolicy policy() const;
  course::JitterOptions jitter() const;
  bool mixing() const { return mixup != 0 || cutmix != 0; }
  course::MixOptions mix_options() const;
};

// The lab's flags on `app` (the race adds its own to the same app).
void add_lab_flags(CLI::App& app, LabOptions& options);

// Parses argv; on --help prints the usage and exits 0, on bad flags prints one message and
// exits non-zero.
LabOptions parse_options(int argc, char** argv);

// Checks value ranges that flags alone cannot (throws course::Error).
void validate(const LabOptions& options);

// The lab's command line given as words (the program's name first), parsed and validated:
// how the HPO and optimizer-comparison tools run the lab with flags from their own command line.
LabOptions parse_lab_words(const std::vector<std::string>& words);

// Flags given as one string ("--epochs 2 --lr 0.1") split at white space.
std::vector<std::string> split_words(const std::string& text);

}  // namespace day3
