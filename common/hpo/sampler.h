// Samplers propose the next trial's parameters from the trials a study already holds.
//
//   random  every parameter uniform in its range (log-uniform for log parameters);
//   grid    every point of a grid (--grid-points per float/int parameter, every choice of a
//           categorical) once, in a seeded shuffled order, then the study is exhausted;
//   tpe     the tree-structured Parzen estimator (tpe.h): multivariate with the constant liar,
//           as Optuna 5 has it, or tpe:univariate, tpe:noliar, tpe:univariate,noliar.
//
// A sampler is a pure function of the study's trials and a random stream seeded by the study's
// seed and the new trial's number, so any worker proposing trial n proposes the same point.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/hpo/rules.h"
#include "common/hpo/search_space.h"
#include "common/hpo/trial.h"

namespace course::hpo {

struct SamplingContext {
  const SearchSpace& space;
  Direction direction;
  const std::vector<Trial>& trials;  // every trial of the study so far, running ones included
  int number;                        // the new trial's number
  uint64_t study_seed;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The next point, or nothing when the sampler has no point left (an exhausted grid).
  virtual std::optional<ParamValues> sample(const SamplingContext& context,
                                            std::mt19937_64& rng) const = 0;
};

class RandomSampler : public Sampler {
 public:
  std::optional<ParamValues> sample(const SamplingContext& context,
                                    std::mt19937_64& rng) const override;
};

class GridSampler : public Sampler {
 public:
  explicit GridSampler(int points_per_axis) : points_per_axis_(points_per_axis) {}
  std::optional<ParamValues> sample(const SamplingContext& context,
                                    std::mt19937_64& rng) const override;
  // The grid's values along one parameter: linear or log spaced, distinct ints, every choice.
  std::vector<double> axis(const ParamSpec& param) const;

 private:
  int points_per_axis_;
};

// "random", "grid" or "grid:K", "tpe" with optional ":univariate", ":noliar" or both
// (comma-separated); anything else is one course::Error.
std::unique_ptr<Sampler> make_sampler(const std::string& spec, const SearchRules& rules = {});

// The random stream of trial `number` in a study seeded with `seed`.
std::mt19937_64 trial_rng(uint64_t seed, int number);

}  // namespace course::hpo
