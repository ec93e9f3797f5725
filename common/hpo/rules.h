// The three rules of the search a trainee writes on day 3 (TP3.8-TP3.10), as replaceable
// functions: the samplers and pruners take them from here, so the day-3 HPO tool runs the
// trainee's versions and everything else the reference ones below.
#pragma once

#include <functional>
#include <vector>

#include "common/hpo/trial.h"

namespace course::hpo {

struct TrialSplit {
  std::vector<const Trial*> below;  // each in trial-number order
  std::vector<const Trial*> above;
};

// TPE's split: the n_below best complete trials (then the pruned ones that got furthest, then
// by the value they last reported) are "below", the other finished ones "above", and with the
// constant liar the running ones too. Failed trials are left out.
TrialSplit split_trials(const std::vector<Trial>& trials, Direction direction, int n_below,
                        bool include_running);

// Successive halving's promotion: a value goes on to the next rung when it is among the top
// floor(n / eta) of the n competing values recorded at the rung (itself included), or the best
// of them when floor(n / eta) is 0.
bool promotable_to_next_rung(double value, std::vector<double> competing, int reduction_factor,
                             Direction direction);

// The median rule, once enough trials are complete: prune when the trial's best value so far
// is worse than the median (numpy's, interpolated) of the complete trials' values at `step`;
// never when none of them reported at that step.
bool median_prunes(const Trial& trial, int step, const std::vector<const Trial*>& complete,
                   Direction direction);

using SplitRule = std::function<TrialSplit(const std::vector<Trial>&, Direction, int, bool)>;
using PromotionRule = std::function<bool(double, std::vector<double>, int, Direction)>;
using MedianRule =
    std::function<bool(const Trial&, int, const std::vector<const Trial*>&, Direction)>;

struct SearchRules {
  SplitRule split = split_trials;
  PromotionRule promotable = promotable_to_next_rung;
  MedianRule median = median_prunes;
};

// numpy's percentile with linear interpolation, NaNs ignored (NaN when nothing is left).
// Infinities interpolate as limits: the median of -inf and 3, or of -inf and -inf, is -inf;
// of -inf and +inf, NaN.
double nan_percentile(std::vector<double> values, double q);

}  // namespace course::hpo
