// Command line of `compress prune`.
#include "day4_large_models/compression/prune_options.h"

#include <CLI/CLI.hpp>

#include "common/core/error.h"
#include "common/train/training_loop.h"
#include "day4_large_models/compression/compress_training.h"
#include "day4_large_models/compression/trained_model.h"

namespace day4 {

void add_prune_flags(CLI::App& app, PruneOptions& o) {
  course::train::add_training_flags(app, o);
  add_checkpoint_flag(app, "--trained", o.trained, "the trained network");
  app.add_option("--sparsities", o.sparsities,
                 "fractions of the weights pruned by global magnitude, one fine-tuned network each")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](const std::string& fraction) {
            return fraction.empty() ? std::string("an empty fraction: give a list such as 0.5,0.9")
                                    : std::string();
          },
          "FRACTIONS"))
      ->capture_default_str();
  course::train::add_switch(app, "two-four", o.two_four,
                            "also prune to the 2:4 pattern (2 zeros in every 4 inputs, TP4.21)");
  app.add_option("--plot", o.plot, "PNG of test accuracy against sparsity");
}

void validate(const PruneOptions& o) {
  course::train::validate_training_flags(o);
  refuse_mixed_precision(o, "prune");
  if (!o.plot.empty()) {
    course::train::check_output_path("--plot", course::train::invocation_path(o.plot));
  }
  for (const double s : o.sparsities) {
    COURSE_CHECK(s >= 0 && s < 1, "--sparsities are fractions in [0, 1), got ", s);
  }
  COURSE_CHECK(!o.sparsities.empty() || o.two_four,
               "nothing to prune: no --sparsities and --no-two-four");
  COURSE_CHECK(o.resume.empty() && o.chkpt.empty(),
               "compress prune fine-tunes one network per sparsity: --chkpt and --resume do not "
               "apply");
}

}  // namespace day4
