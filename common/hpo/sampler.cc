// The random and grid samplers, and the sampler factory.
#include "common/hpo/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "common/core/error.h"
#include "common/hpo/tpe.h"

namespace course::hpo {

std::optional<ParamValues> RandomSampler::sample(const SamplingContext& context,
                                                 std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ParamValues values;
  for (const ParamSpec& param : context.space.params) {
    values.push_back(value_at_fraction(param, unit(rng)));
  }
  return values;
}

std::vector<double> GridSampler::axis(const ParamSpec& param) const {
  std::vector<double> values;
  if (param.kind == ParamKind::kCategorical) {
    for (size_t c = 0; c < param.choices.size(); ++c) values.push_back(static_cast<double>(c));
    return values;
  }
  const double lo = param.log ? std::log(param.low) : param.low;
  const double hi = param.log ? std::log(param.high) : param.high;
  for (int k = 0; k < points_per_axis_; ++k) {
    const double t = points_per_axis_ == 1 ? 0.5 : static_cast<double>(k) / (points_per_axis_ - 1);
    double value = lo + t * (hi - lo);
    if (param.log) value = std::exp(value);
    value = std::clamp(param.kind == ParamKind::kInt ? std::round(value) : value, param.low,
                       param.high);
    if (values.empty() || values.back() != value) values.push_back(value);
  }
  return values;
}

std::optional<ParamValues> GridSampler::sample(const SamplingContext& context,
                                               std::mt19937_64& /*rng*/) const {
  std::vector<std::vector<double>> axes;
  size_t n_points = 1;
  for (const ParamSpec& param : context.space.params) {
    axes.push_back(axis(param));
    n_points *= axes.back().size();
  }
  std::set<ParamValues> taken;
  for (const Trial& trial : context.trials) taken.insert(trial.params);
  // The order is seeded by the study alone (not the trial), so every worker walks the same one.
  std::vector<size_t> order(n_points);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 study_order = trial_rng(context.study_seed, -1);
  std::shuffle(order.begin(), order.end(), study_order);
  for (size_t index : order) {
    ParamValues point;
    size_t rest = index;
    for (const std::vector<double>& values : axes) {
      point.push_back(values[rest % values.size()]);
      rest /= values.size();
    }
    if (!taken.count(point)) return point;
  }
  return std::nullopt;
}

std::unique_ptr<Sampler> make_sampler(const std::string& spec, const SearchRules& rules) {
  if (spec == "random") return std::make_unique<RandomSampler>();
  if (spec == "grid") return std::make_unique<GridSampler>(5);
  if (spec.rfind("grid:", 0) == 0) {
    const int points = std::atoi(spec.c_str() + 5);
    COURSE_CHECK(points >= 1 && spec.substr(5) == std::to_string(points), "sampler '", spec,
                 "': grid:K needs K >= 1 points per parameter");
    return std::make_unique<GridSampler>(points);
  }
  if (spec == "tpe" || spec.rfind("tpe:", 0) == 0) {
    TpeOptions options;
    std::istringstream settings(spec.size() > 4 ? spec.substr(4) : "");
    for (std::string setting; std::getline(settings, setting, ',');) {
      if (setting == "univariate") {
        options.multivariate = false;
      } else if (setting == "noliar") {
        options.constant_liar = false;
      } else {
        COURSE_FAIL("sampler '", spec, "': unknown TPE setting '", setting,
                    "' (univariate, noliar)");
      }
    }
    return std::make_unique<TpeSampler>(options, rules);
  }
  COURSE_FAIL("unknown sampler '", spec, "' (random, grid[:K], tpe[:univariate,noliar])");
}

std::mt19937_64 trial_rng(uint64_t seed, int number) {
  // splitmix64 of (seed, number): nearby seeds and numbers give unrelated streams.
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(number) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return std::mt19937_64(z ^ (z >> 31));
}

}  // namespace course::hpo
