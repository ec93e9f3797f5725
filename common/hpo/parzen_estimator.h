// TPE's Parzen estimator over a search space: a weighted mixture of one kernel per observed
// point plus a prior kernel, each kernel a product of one distribution per parameter,
// truncated to the parameter's range (Optuna's multivariate estimator; a one-parameter space
// gives the univariate one).
//
// Numerical parameters (in log space for log ones, ints widened by half a step): a Gaussian
// per observation whose width is the larger gap to its sorted neighbours (the range's ends
// count as neighbours, except that the outermost observations take their inner gap), clipped
// to [range / min(100, kernels + 1), range]; the prior is centred with the range as its width.
// Categorical parameters: each kernel puts prior_weight / kernels on every choice plus one on
// the observed choice, normalised. Mixture weights: the observations' (see tpe_weights) then
// prior_weight, normalised. Ints are rounded after sampling and scored by the mass of their
// unit interval.
#pragma once

#include <random>
#include <vector>

#include "common/hpo/search_space.h"

namespace course::hpo {

class ParzenEstimator {
 public:
  ParzenEstimator(const SearchSpace& space, const std::vector<ParamValues>& observations,
                  const std::vector<double>& observation_weights, double prior_weight);

  ParamValues sample(std::mt19937_64& rng) const;  // values in the parameters' own form
  double log_pdf(const ParamValues& point) const;  // in the estimator's space (log if log)

  // Kernel k of parameter d: its centre and width (numerical parameters only).
  const std::vector<double>& mus(size_t d) const { return mus_[d]; }
  const std::vector<double>& sigmas(size_t d) const { return sigmas_[d]; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  double kernel_log_pdf(size_t d, size_t kernel, double value) const;
  double sample_kernel(size_t d, size_t kernel, std::mt19937_64& rng) const;

  SearchSpace space_;
  std::vector<double> weights_;  // per kernel, summing to 1
  // Per parameter, per kernel: numerical centres and widths, or categorical probabilities.
  std::vector<std::vector<double>> mus_, sigmas_;
  std::vector<std::vector<std::vector<double>>> choice_probabilities_;
};

// log(Phi(b) - Phi(a)) for a <= b, accurate in both tails.
double log_gauss_mass(double a, double b);

}  // namespace course::hpo
