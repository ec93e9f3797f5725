// Pruners stop unpromising trials early from the values they report at each step.
//
//   none        never prunes;
//   median      after 5 complete trials, prunes a trial whose best value so far is worse than
//               the median of the complete trials' values at the same step;
//   sh          successive halving, asynchronous (Optuna's): at step min_resource * eta^(s+k)
//               a trial records its value at rung k and carries on only if it is in the top
//               floor(n / eta) of the n values recorded at that rung (the best so far when
//               floor(n / eta) is 0); min_resource 0 means max(longest complete trial // 100, 1);
//   hyperband   brackets s = 0 .. floor(log_eta(max / min)) of successive halving, trials
//               assigned to brackets by CRC-32 of "<study>_<number>" in proportion to each
//               bracket's budget ceil(B eta^(B-1-s) / (B-s)), each bracket seeing its own trials;
//   asha        asynchronous successive halving as Ray Tune's scheduler does it: rungs at
//               grace * eta^k below max_t; at the highest rung a trial reaches, it stops if its
//               value is worse than the (1 - 1/eta) quantile of the values recorded there before.
//
// A pruner is a pure function of the trial and the study's other trials; the rung values it
// records are returned for the storage to keep, in the same transaction.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/hpo/rules.h"
#include "common/hpo/trial.h"

namespace course::hpo {

struct PruneDecision {
  bool prune = false;
  std::map<int, double> new_rungs;  // rung -> value, to record on the trial
};

class Pruner {
 public:
  virtual ~Pruner() = default;
  // `trial` holds every value it reported, the latest included; `others` the study's other
  // trials.
  virtual PruneDecision decide(const Trial& trial, const std::vector<Trial>& others,
                               Direction direction) const = 0;
};

class NopPruner : public Pruner {
 public:
  PruneDecision decide(const Trial&, const std::vector<Trial>&, Direction) const override {
    return {};
  }
};

struct MedianPrunerOptions {
  int n_startup_trials = 5;
  int n_warmup_steps = 0;
};

class MedianPruner : public Pruner {
 public:
  MedianPruner(MedianPrunerOptions options, MedianRule rule = median_prunes)
      : options_(options), rule_(std::move(rule)) {}
  PruneDecision decide(const Trial& trial, const std::vector<Trial>& others,
                       Direction direction) const override;

 private:
  MedianPrunerOptions options_;
  MedianRule rule_;
};

struct SuccessiveHalvingOptions {
  int min_resource = 0;  // 0: estimated from the complete trials
  int reduction_factor = 4;
  int min_early_stopping_rate = 0;
};

class SuccessiveHalvingPruner : public Pruner {
 public:
  SuccessiveHalvingPruner(SuccessiveHalvingOptions options,
                          PromotionRule rule = promotable_to_next_rung)
      : options_(options), rule_(std::move(rule)) {}
  PruneDecision decide(const Trial& trial, const std::vector<Trial>& others,
                       Direction direction) const override;

 private:
  SuccessiveHalvingOptions options_;
  PromotionRule rule_;
};

struct HyperbandOptions {
  int min_resource = 1;
  int max_resource = 0;  // 0: the longest complete trial's last step + 1
  int reduction_factor = 3;
};

class HyperbandPruner : public Pruner {
 public:
  HyperbandPruner(HyperbandOptions options, std::string study_name,
                  PromotionRule rule = promotable_to_next_rung)
      : options_(options), study_name_(std::move(study_name)), rule_(std::move(rule)) {}
  PruneDecision decide(const Trial& trial, const std::vector<Trial>& others,
                       Direction direction) const override;
  // The bracket of trial `number` when there are `n_brackets` brackets.
  int bracket(int number, int n_brackets) const;

 private:
  HyperbandOptions options_;
  std::string study_name_;
  PromotionRule rule_;
};

struct AshaOptions {
  int grace_period = 1;
  int reduction_factor = 4;
  int max_t = 100;
};

class AshaPruner : public Pruner {
 public:
  explicit AshaPruner(AshaOptions options) : options_(options) {}
  PruneDecision decide(const Trial& trial, const std::vector<Trial>& others,
                       Direction direction) const override;

 private:
  AshaOptions options_;
};

// "none", "median", "sh", "hyperband", "asha", each optionally with ":key=value,..." overrides
// (median: startup, warmup; sh: min, eta, rate; hyperband: min, max, eta; asha: grace, eta,
// max); bad specs are one course::Error.
std::unique_ptr<Pruner> make_pruner(const std::string& spec, const std::string& study_name,
                                    const SearchRules& rules = {});

}  // namespace course::hpo
