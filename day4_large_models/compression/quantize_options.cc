// Command line of `compress quantize`.
#include "day4_large_models/compression/quantize_options.h"

#include <CLI/CLI.hpp>

#include "common/core/error.h"
#include "common/models/convnets/convnets.h"
#include "common/models/model_registry.h"
#include "common/models/models.h"
#include "common/train/lab_flags.h"
#include "day4_large_models/compression/trained_model.h"

namespace day4 {

void add_quantize_flags(CLI::App& app, QuantizeOptions& o) {
  course::train::add_data_flags(app, o);
  add_checkpoint_flag(app, "--trained", o.trained, "the trained network");
  app.add_option("--model", o.model, "the trained network's model")
      ->check(CLI::IsMember(course::nn::small_net_family().names()))
      ->capture_default_str();
  app.add_option("-b,--batch-size", o.batch_size, "images per inference batch")
      ->capture_default_str();
  course::train::add_device_flag(app, o.device,
                                 "cpu, cuda or cuda:N (default: the GPU if one is visible)");
  app.add_option("--calibration", o.calibration,
                 "how the inputs' scales are chosen: minmax (max |x|), percentile (--percentile "
                 "of |x|), or both (an int8 network each)")
      ->check(CLI::IsMember({"minmax", "percentile", "both"}))
      ->capture_default_str();
  app.add_option("--percentile", o.percentile, "of |x|, for percentile calibration")
      ->capture_default_str();
  app.add_option("--calibration-batches", o.calibration_batches,
                 "training batches whose inputs set the scales")
      ->capture_default_str();
  app.add_option("--timing-passes", o.timing_passes,
                 "passes over the calibration batches timed per network (the median counts)")
      ->capture_default_str();
  app.add_flag_callback(
      "--no-progress", [&o] { o.progress = false; }, "no progress bar");
}

void validate(const QuantizeOptions& o) {
  COURSE_CHECK(o.batch_size > 0, "--batch-size must be positive, got ", o.batch_size);
  COURSE_CHECK(o.synthetic >= 0, "--synthetic must not be negative");
  COURSE_CHECK(o.percentile > 0 && o.percentile <= 100, "--percentile must be in (0, 100], got ",
               o.percentile);
  COURSE_CHECK(o.calibration_batches > 0, "--calibration-batches must be positive, got ",
               o.calibration_batches);
  COURSE_CHECK(o.timing_passes > 0, "--timing-passes must be positive, got ", o.timing_passes);
  const int64_t smallest = course::nn::min_image_size(o.model);
  COURSE_CHECK(o.image_size >= smallest, "--image-size ", o.image_size, " is too small for ",
               o.model, " (at least ", smallest, ")");
}

}  // namespace day4
