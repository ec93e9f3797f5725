// An in-memory study of a synthetic function (see synthetic_study.h).
#include "common/hpo/synthetic_study.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/hpo/objectives.h"

namespace course::hpo {

double best_of_synthetic_study(const std::string& function, const Sampler& sampler, uint64_t seed,
                               int n_trials) {
  const SearchSpace space = parse_search_space(synthetic_space(function));
  std::vector<Trial> trials;
  double best = INFINITY;
  for (int n = 0; n < n_trials; ++n) {
    std::mt19937_64 rng = trial_rng(seed, n);
    const SamplingContext context{space, Direction::kMinimize, trials, n, seed};
    Trial trial;
    trial.number = n;
    trial.params = *sampler.sample(context, rng);
    trial.value = synthetic_objective(function, trial.params[0], trial.params[1]);
    trial.state = TrialState::kComplete;
    best = std::min(best, *trial.value);
    trials.push_back(std::move(trial));
  }
  return best;
}

}  // namespace course::hpo
