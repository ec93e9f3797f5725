// The TPE sampler (see tpe.h).
#include "common/hpo/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace course::hpo {
namespace {

bool finished(const Trial& trial) {
  return trial.state == TrialState::kComplete || trial.state == TrialState::kPruned;
}

// The estimator of the parameters `dims` of `space` over the points of `trials`.
ParzenEstimator fit(const SearchSpace& space, const std::vector<size_t>& dims,
                    const std::vector<const Trial*>& trials, double prior_weight) {
  std::vector<ParamValues> observations;
  for (const Trial* trial : trials) {
    ParamValues point;
    for (size_t d : dims) point.push_back(trial->params.at(d));
    observations.push_back(point);
  }
  return ParzenEstimator(space, observations, tpe_weights(static_cast<int>(trials.size())),
                         prior_weight);
}

}  // namespace

int tpe_gamma(int n_finished) {
  return std::min(static_cast<int>(std::ceil(0.1 * n_finished)), 25);
}

std::vector<double> tpe_weights(int n) {
  if (n < 25) return std::vector<double>(static_cast<size_t>(n), 1.0);
  std::vector<double> weights;
  const int ramp = n - 25;
  for (int i = 0; i < ramp; ++i) {
    const double t = ramp == 1 ? 0.0 : static_cast<double>(i) / (ramp - 1);
    weights.push_back(1.0 / n + t * (1.0 - 1.0 / n));
  }
  weights.resize(static_cast<size_t>(n), 1.0);
  return weights;
}

ParamValues best_candidate(const std::vector<ParamValues>& candidates, const ParzenEstimator& below,
                           const ParzenEstimator& above) {
  ParamValues best = candidates.at(0);
  double best_score = -std::numeric_limits<double>::infinity();
  for (const ParamValues& candidate : candidates) {
    const double score = below.log_pdf(candidate) - above.log_pdf(candidate);
    if (score > best_score) best = candidate, best_score = score;
  }
  return best;
}

ParamValues TpeSampler::sample_space(const SearchSpace& space, const std::vector<size_t>& dims,
                                     const TrialSplit& split, std::mt19937_64& rng) const {
  const ParzenEstimator below = fit(space, dims, split.below, options_.prior_weight);
  const ParzenEstimator above = fit(space, dims, split.above, options_.prior_weight);
  std::vector<ParamValues> candidates;
  for (int c = 0; c < options_.n_ei_candidates; ++c) candidates.push_back(below.sample(rng));
  return best_candidate(candidates, below, above);
}

std::optional<ParamValues> TpeSampler::sample(const SamplingContext& context,
                                              std::mt19937_64& rng) const {
  const int n_finished =
      static_cast<int>(std::count_if(context.trials.begin(), context.trials.end(), finished));
  if (n_finished < options_.n_startup_trials) return RandomSampler().sample(context, rng);

  const TrialSplit split = rules_.split(context.trials, context.direction, tpe_gamma(n_finished),
                                        options_.constant_liar);
  const std::vector<ParamSpec>& params = context.space.params;
  if (options_.multivariate) {
    std::vector<size_t> all(params.size());
    std::iota(all.begin(), all.end(), 0);
    return sample_space(context.space, all, split, rng);
  }
  ParamValues values;
  for (size_t d = 0; d < params.size(); ++d) {
    values.push_back(sample_space(SearchSpace{{params[d]}}, {d}, split, rng)[0]);
  }
  return values;
}

}  // namespace course::hpo
