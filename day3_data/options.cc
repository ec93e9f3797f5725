// Command line of the day-3 lab.
#include "day3_data/options.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "common/core/launch_rank.h"
#include "common/core/named_choices.h"
#include "common/optim/make_optimizer.h"
#include "common/optim/schedule.h"
#include "common/parallel/data_parallel/onebit_optimizer.h"

namespace day3 {

const char* findlr_mode_name(FindLrMode mode) {
  return mode == FindLrMode::kCorrelated ? "correlated" : "decorrelated";
}

course::AugmentPolicy LabOptions::policy() const {
  return {.kind = auto_augment, .ops = ra_n, .magnitude = ra_m};
}

course::JitterOptions LabOptions::jitter() const {
  return {.max_translate = translate, .brightness = brightness, .contrast = contrast};
}

course::MixOptions LabOptions::mix_options() const {
  return {.mixup_alpha = mixup,
          .cutmix_alpha = cutmix,
          .prob = mix_prob,
          .switch_prob = switch_prob,
          .mode = mix_mode,
          .label_smoothing = label_smoothing};
}

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 3: augmentation in the loader's workers (RandAugment, TrivialAugmentWide, jitter) or "
      "on the training device (--aug-device), and MixUp / CutMix of whole batches (TP3.1-TP3.3)");
  add_lab_flags(app, o);
  course::train::parse_or_exit(app, argc, argv);
  return o;
}

namespace {

// Part 1's flags: augmentation on the host or the device, MixUp and CutMix; and the formats'.
void add_augmentation_flags(CLI::App& app, LabOptions& o) {
  course::train::add_choice(app, "--auto-augment", o.auto_augment, course::augment_policy_choices(),
                            "automatic augmentation policy, per image");
  app.add_option("--ra-n", o.ra_n, "RandAugment: operations per image");
  app.add_option("--ra-m", o.ra_m, "RandAugment: magnitude bin, 0-30");
  app.add_option("--translate", o.translate, "jitter: move by up to this many pixels");
  app.add_option("--brightness", o.brightness, "jitter: brightness factor in [1 - b, 1 + b]");
  app.add_option("--contrast", o.contrast, "jitter: contrast factor in [1 - c, 1 + c]");
  app.add_flag("--aug-device", o.aug_device,
               "flip and jitter the batch on the training device, and mix it there, instead of "
               "in the loader's workers and on the host");
  app.add_option("--mixup", o.mixup, "MixUp's Beta alpha (0: off; 0.8 in strong recipes)");
  app.add_option("--cutmix", o.cutmix, "CutMix's Beta alpha (0: off; 1.0 in strong recipes)");
  course::train::add_choice(app, "--mix-mode", o.mix_mode, course::mix_mode_choices(),
                            "one lambda per batch, per pair or per element");
  app.add_option("--mix-prob", o.mix_prob, "probability of mixing a batch, pair or element");
  app.add_option("--switch-prob", o.switch_prob,
                 "probability of CutMix rather than MixUp when both are on");
  app.add_option("--shuffle-buffer", o.shuffle_buffer,
                 "tar shards: samples in WebDataset's shuffle buffer");
  app.add_option("--pages-in-memory", o.pages_in_memory,
                 "packed files: pages read together in the quasi-random order");
}

// Part 3's flags: the optimizer, its schedule and the learning-rate finder.
void add_optimization_flags(CLI::App& app, LabOptions& o) {
  course::train::add_choice(app, "--optimizer", o.optimizer, course::optim::optimizer_choices(true),
                            "the optimizer (its own defaults for the rest; onebit-adam, "
                            "onebit-lamb: 1-bit Adam and LAMB, the momentum averaged over the "
                            "ranks as signs after --freeze-step steps)");
  app.add_option("--freeze-step", o.freeze_step,
                 "1-bit optimizers: steps of plain AdamW / LAMB before the variance freezes "
                 "(default 100)");
  course::train::add_choice(app, "--schedule", o.schedule, course::optim::schedule_choices(),
                            "the learning rate's schedule, stepped every step");
  app.add_option("--cosine-floor", o.cosine_floor,
                 "cosine schedule: decay to this fraction of --lr (0.2: lr/5)");
  app.add_option("--warmup-epochs", o.warmup_epochs,
                 "linear warm-up from 0 over this many epochs (fractions allowed)");
  app.add_flag("--findlr", o.findlr,
               "sweep the learning rate from --findlr-start up to --lr instead of training, "
               "and suggest one");
  course::train::add_choice(
      app, "--findlr-mode", o.findlr_mode,
      course::named_choices({FindLrMode::kCorrelated, FindLrMode::kDecorrelated}, findlr_mode_name),
      "correlated: one run, the rate raised every --findlr-steps steps; decorrelated: a fresh "
      "model for each rate");
  app.add_option("--findlr-start", o.findlr_start, "the sweep's first rate")->capture_default_str();
  app.add_option("--findlr-rates", o.findlr_rates, "log-spaced rates in the sweep")
      ->capture_default_str();
  app.add_option("--findlr-steps", o.findlr_steps, "steps at each rate")->capture_default_str();
  app.add_option("--findlr-plot", o.findlr_plot,
                 "the sweep's PNG (its table goes beside it as .csv); relative to the folder "
                 "bazel run started in")
      ->capture_default_str();
}

}  // namespace

void add_lab_flags(CLI::App& app, LabOptions& o) {
  course::train::add_training_flags(app, o);
  course::train::add_step_flags(app, o);
  course::train::add_decode_device_flag(app, o);
  add_augmentation_flags(app, o);
  app.add_option("--comm-timeout", o.comm_timeout,
                 "several ranks (mpirun, srun): seconds to wait for the other ranks")
      ->capture_default_str();
  add_optimization_flags(app, o);
}

void validate(const LabOptions& o) {
  course::train::validate_training_flags(o);
  course::validate(o.policy());
  course::validate(o.jitter());
  COURSE_CHECK(o.shuffle_buffer > 0 && o.pages_in_memory > 0,
               "--shuffle-buffer and --pages-in-memory must be positive");
  COURSE_CHECK(o.comm_timeout > 0, "--comm-timeout must be positive");
  COURSE_CHECK(o.cosine_floor >= 0 && o.cosine_floor <= 1, "--cosine-floor is a fraction of --lr, ",
               "from 0 to 1, got ", o.cosine_floor);
  COURSE_CHECK(o.warmup_epochs >= 0 && o.warmup_epochs <= o.epochs,
               "--warmup-epochs must be from 0 to --epochs, got ", o.warmup_epochs);
  const bool onebit = course::optim::is_onebit(o.optimizer);
  COURSE_CHECK(!o.freeze_step || onebit, "--freeze-step is the 1-bit optimizers' warm-up; ",
               "--optimizer ", course::optim::optimizer_name(o.optimizer), " has none");
  if (onebit) {
    COURSE_CHECK(o.freeze_step.value_or(1) >= 1, "--freeze-step must be at least 1, got ",
                 *o.freeze_step);
    COURSE_CHECK(!o.clip_grad_norm,
                 "--clip-grad-norm needs the gradients averaged over the "
                 "ranks, which no rank holds once --optimizer ",
                 course::optim::optimizer_name(o.optimizer),
                 " keeps them local after --freeze-step");
  }
  if (o.findlr) {
    COURSE_CHECK(o.findlr_rates >= 2 && o.findlr_steps >= 1,
                 "--findlr needs at least 2 rates of at least 1 step each");
    COURSE_CHECK(o.findlr_start > 0 && o.findlr_start < o.lr, "--findlr sweeps from ",
                 "--findlr-start up to --lr: need 0 < ", o.findlr_start, " < ", o.lr);
    COURSE_CHECK(o.chkpt.empty() && o.resume.empty(),
                 "--findlr trains nothing worth keeping: drop --chkpt and --resume");
  }
  if (o.decode_device == course::DecodeDevice::kGpu) {
    COURSE_CHECK(o.auto_augment == course::AugmentPolicyKind::kNone,
                 "--auto-augment works on decoded images in the loader's workers; with "
                 "--decode-device gpu the images are decoded on the device: use --decode-device "
                 "cpu");
    COURSE_CHECK(o.aug_device || (!o.jitter().active() && !o.mixing()),
                 "--translate, --brightness, --contrast, --mixup and --cutmix with "
                 "--decode-device gpu need --aug-device: the batch exists only on the device");
  }
  if (!o.mixing()) return;
  COURSE_CHECK(o.batch_size % 2 == 0,
               "--mixup and --cutmix pair each sample with its partner "
               "in the flipped batch: --batch-size must be even, got ",
               o.batch_size);
  course::validate(o.mix_options());
}

LabOptions parse_lab_words(const std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (const std::string& word : words) argv.push_back(const_cast<char*>(word.c_str()));
  LabOptions options = parse_options(static_cast<int>(argv.size()), argv.data());
  course::check_alike_on_every_rank([&] { validate(options); });
  return options;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace day3
