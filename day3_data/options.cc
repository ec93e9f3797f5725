// Command line of the day-3 lab.
#include "day3_data/options.h"

namespace day3 {

course::AugmentPolicy LabOptions::policy() const {
  return {.kind = course::parse_augment_policy(auto_augment), .ops = ra_n, .magnitude = ra_m};
}

course::JitterOptions LabOptions::jitter() const {
  return {.max_translate = translate, .brightness = brightness, .contrast = contrast};
}

course::MixOptions LabOptions::mix_options() const {
  return {.mixup_alpha = mixup,
          .cutmix_alpha = cutmix,
          .prob = mix_prob,
          .switch_prob = switch_prob,
          .mode = course::parse_mix_mode(mix_mode),
          .label_smoothing = label_smoothing};
}

LabOptions parse_options(int argc, char** argv) {
  LabOptions o;
  CLI::App app(
      "Day 3: augmentation in the loader's workers (RandAugment, TrivialAugmentWide, jitter) or "
      "on the training device (--aug-device), and MixUp / CutMix of whole batches (TP3.1-TP3.3)");
  course::train::add_training_flags(app, o);
  app.add_option("--auto-augment", o.auto_augment, "automatic augmentation policy, per image")
      ->check(CLI::IsMember({"none", "randaugment", "trivialaugment"}));
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
  app.add_option("--mix-mode", o.mix_mode, "one lambda per batch, per pair or per element")
      ->check(CLI::IsMember({"batch", "pair", "elem"}));
  app.add_option("--mix-prob", o.mix_prob, "probability of mixing a batch, pair or element");
  app.add_option("--switch-prob", o.switch_prob,
                 "probability of CutMix rather than MixUp when both are on");
  app.add_option("--shuffle-buffer", o.shuffle_buffer,
                 "tar shards: samples in WebDataset's shuffle buffer");
  app.add_option("--pages-in-memory", o.pages_in_memory,
                 "packed files: pages read together in the quasi-random order");
  course::train::parse_or_exit(app, argc, argv);
  return o;
}

void validate(const LabOptions& o) {
  course::train::validate_training_flags(o);
  course::validate(o.policy());
  course::validate(o.jitter());
  COURSE_CHECK(!(o.amp && o.amp_dtype == course::DType::kF16),
               "the day-3 lab trains in f32 or with --amp-dtype bf16 (f16's loss scaling is day "
               "1's exercise)");
  COURSE_CHECK(o.shuffle_buffer > 0 && o.pages_in_memory > 0,
               "--shuffle-buffer and --pages-in-memory must be positive");
  if (!o.mixing()) return;
  COURSE_CHECK(o.batch_size % 2 == 0,
               "--mixup and --cutmix pair each sample with its partner "
               "in the flipped batch: --batch-size must be even, got ",
               o.batch_size);
  course::validate(o.mix_options());
}

}  // namespace day3
