// Command line of `compress distill`.
#include "day4_large_models/compression/distill_options.h"

#include <CLI/CLI.hpp>

#include "common/core/error.h"
#include "common/models/model_registry.h"
#include "common/models/models.h"
#include "day4_large_models/compression/compress_training.h"
#include "day4_large_models/compression/trained_model.h"

namespace day4 {

void add_distill_flags(CLI::App& app, DistillOptions& o) {
  course::train::add_training_flags(app, o);
  add_checkpoint_flag(app, "--teacher", o.teacher, "the trained teacher");
  app.add_option("--teacher-model", o.teacher_model, "the teacher's network")
      ->check(CLI::IsMember(course::nn::image_model_names()))
      ->capture_default_str();
  app.add_option("--temperature", o.temperature, "T, softening both networks' outputs")
      ->capture_default_str();
  app.add_option("--alpha", o.alpha,
                 "weight of the soft term (alpha T^2 KL); the labels' cross-entropy gets 1 - alpha")
      ->capture_default_str();
  app.add_flag("--baseline", o.baseline,
               "first train the same student from the labels alone, then compare the two");
}

void validate(const DistillOptions& o) {
  course::train::validate_training_flags(o);
  refuse_mixed_precision(o, "distill");
  COURSE_CHECK(o.temperature > 0, "--temperature must be positive, got ", o.temperature);
  COURSE_CHECK(o.alpha >= 0 && o.alpha <= 1, "--alpha must be in [0, 1], got ", o.alpha);
  COURSE_CHECK(o.resume.empty() || !o.baseline,
               "--resume continues the distilled student: drop --baseline");
}

}  // namespace day4
