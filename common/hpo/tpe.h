// The tree-structured Parzen estimator (TPE) sampler, with Optuna 5's defaults.
//
// After n_startup_trials finished (complete or pruned) trials sampled at random, the trials
// are split into the gamma(n) best ("below") and the rest ("above"); a Parzen estimator l is
// fitted to the below points and g to the above ones; n_ei_candidates points are drawn from l
// and the one maximising log l - log g (the expected improvement's ranking) is kept. Pruned
// trials count as below after the complete ones, the furthest-trained first; with the constant
// liar, running trials count as above, so parallel workers stop proposing the point another
// worker is already evaluating. Multivariate (the default) fits one estimator over all
// parameters, whose kernels keep each observed point's coordinates together; univariate (the
// default before Optuna 5) fits and chooses each parameter on its own.
#pragma once

#include <vector>

#include "common/hpo/parzen_estimator.h"
#include "common/hpo/rules.h"
#include "common/hpo/sampler.h"

namespace course::hpo {

struct TpeOptions {
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  double prior_weight = 1.0;
  bool multivariate = true;
  bool constant_liar = true;
};

// How many trials are "below": min(ceil(0.1 n), 25).
int tpe_gamma(int n_finished);

// The weights of n observations in trial-number order: all 1 below 25, else a ramp from 1/n
// to 1 over the n - 25 oldest and 1 for the 25 newest.
std::vector<double> tpe_weights(int n);

// The candidate with the largest log l - log g (the first of equal ones).
ParamValues best_candidate(const std::vector<ParamValues>& candidates, const ParzenEstimator& below,
                           const ParzenEstimator& above);

class TpeSampler : public Sampler {
 public:
  TpeSampler(TpeOptions options, SearchRules rules) : options_(options), rules_(std::move(rules)) {}
  std::optional<ParamValues> sample(const SamplingContext& context,
                                    std::mt19937_64& rng) const override;

 private:
  ParamValues sample_space(const SearchSpace& space, const std::vector<size_t>& dims,
                           const TrialSplit& split, std::mt19937_64& rng) const;

  TpeOptions options_;
  SearchRules rules_;
};

}  // namespace course::hpo
