// A whole study of a synthetic function in memory: the sampler proposes each trial from the
// earlier ones exactly as a worker does, without the database. What the sampler tests and the
// comparison with Optuna (bench/compare/hpo_search) measure.
#pragma once

#include <cstdint>
#include <string>

#include "common/hpo/sampler.h"

namespace course::hpo {

// The best (smallest) value of `function` found in n_trials trials of a study seeded `seed`.
double best_of_synthetic_study(const std::string& function, const Sampler& sampler, uint64_t seed,
                               int n_trials);

}  // namespace course::hpo
