// The learning-rate finder of the course's race script (--findlr): the lab trained for
// --findlr-steps steps at each of --findlr-rates rates log-spaced from --findlr-start up to
// --lr (TP3.6), then the rate one tenth of the best one suggested (TP3.7).
//   correlated:   one run, the rate raised every --findlr-steps steps (fast; each rate starts
//                 from what the lower ones trained);
//   decorrelated: a fresh model for each rate (each rate judged alone; rates times slower).
// A rate's loss is the mean training loss of its steps. The sweep stops at the first rate that
// diverges (a non-finite loss, or a mean four times the lowest so far): higher rates are not run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "day3_data/options.h"

namespace day3 {

enum class RateOutcome { kMeasured, kDiverged, kNotRun };

struct SweepPoint {
  float lr = 0;
  double mean_loss = 0;  // NaN unless measured
  RateOutcome outcome = RateOutcome::kNotRun;
};

struct LrSweep {
  std::vector<SweepPoint> points;
  std::optional<float> suggested;  // none when no rate was measured
};

// Runs the sweep of `options` (with --findlr), prints its table and suggestion, and writes
// the PNG and CSV of --findlr-plot.
LrSweep find_lr(const LabOptions& options);

}  // namespace day3
