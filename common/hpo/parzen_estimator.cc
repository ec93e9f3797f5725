// The Parzen estimator of one parameter (see parzen_estimator.h).
#include "common/hpo/parzen_estimator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/core/error.h"

namespace course::hpo {
namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;

double log_sum_exp(const std::vector<double>& terms) {
  const double top = *std::max_element(terms.begin(), terms.end());
  if (std::isinf(top)) return top;
  double sum = 0.0;
  for (double term : terms) sum += std::exp(term - top);
  return top + std::log(sum);
}

// The kernels' widths, in the observations' own order.
std::vector<double> kernel_sigmas(const std::vector<double>& mus, double low, double high) {
  const size_t n = mus.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mus[a] < mus[b]; });
  std::vector<double> sorted(n + 2);
  sorted[0] = low;
  for (size_t i = 0; i < n; ++i) sorted[i + 1] = mus[order[i]];
  sorted[n + 1] = high;
  std::vector<double> sorted_sigmas(n);
  for (size_t i = 0; i < n; ++i) {
    sorted_sigmas[i] = std::max(sorted[i + 1] - sorted[i], sorted[i + 2] - sorted[i + 1]);
  }
  if (n >= 2) {  // the outermost observations ignore the range's ends
    sorted_sigmas[0] = sorted[2] - sorted[1];
    sorted_sigmas[n - 1] = sorted[n] - sorted[n - 1];
  }
  const double max_sigma = high - low;
  const double min_sigma = (high - low) / std::min(100.0, 1.0 + static_cast<double>(n + 1));
  std::vector<double> sigmas(n);
  for (size_t i = 0; i < n; ++i) {
    sigmas[order[i]] = std::clamp(sorted_sigmas[i], min_sigma, max_sigma);
  }
  return sigmas;
}

}  // namespace

double log_gauss_mass(double a, double b) {
  // Phi(b) - Phi(a) through erfc on the side where it does not cancel.
  if (a >= 0.0) {
    return std::log(0.5 * std::erfc(a / std::sqrt(2.0)) - 0.5 * std::erfc(b / std::sqrt(2.0)));
  }
  if (b <= 0.0) return log_gauss_mass(-b, -a);
  return std::log(1.0 - 0.5 * std::erfc(-a / std::sqrt(2.0)) - 0.5 * std::erfc(b / std::sqrt(2.0)));
}

ParzenEstimator::ParzenEstimator(const SearchSpace& space,
                                 const std::vector<ParamValues>& observations,
                                 const std::vector<double>& observation_weights,
                                 double prior_weight)
    : space_(space) {
  COURSE_CHECK(observations.size() == observation_weights.size(),
               "Parzen estimator: one weight per observation");
  weights_ = observation_weights;
  weights_.push_back(observations.empty() ? 1.0 : prior_weight);
  const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  for (double& weight : weights_) weight /= total;

  const size_t n = observations.size();
  const size_t dims = space.params.size();
  mus_.resize(dims);
  sigmas_.resize(dims);
  choice_probabilities_.resize(dims);
  for (size_t d = 0; d < dims; ++d) {
    const ParamSpec& param = space.params[d];
    if (param.kind == ParamKind::kCategorical) {
      const size_t n_choices = param.choices.size();
      const double spread = observations.empty() ? 1.0 / static_cast<double>(n_choices)
                                                 : prior_weight / static_cast<double>(n + 1);
      std::vector<std::vector<double>>& rows = choice_probabilities_[d];
      rows.assign(n + 1, std::vector<double>(n_choices, spread));
      for (size_t k = 0; k < n; ++k) rows[k][static_cast<size_t>(observations[k].at(d))] += 1;
      for (std::vector<double>& row : rows) {
        const double row_sum = std::accumulate(row.begin(), row.end(), 0.0);
        for (double& p : row) p /= row_sum;
      }
      continue;
    }
    const double low = param.internal_low(), high = param.internal_high();
    for (const ParamValues& point : observations) {
      mus_[d].push_back(param.log ? std::log(point.at(d)) : point.at(d));
    }
    sigmas_[d] = kernel_sigmas(mus_[d], low, high);
    mus_[d].push_back(0.5 * (low + high));
    sigmas_[d].push_back(high - low);
  }
}

double ParzenEstimator::sample_kernel(size_t d, size_t kernel, std::mt19937_64& rng) const {
  const ParamSpec& param = space_.params[d];
  if (param.kind == ParamKind::kCategorical) {
    const std::vector<double>& row = choice_probabilities_[d][kernel];
    std::discrete_distribution<size_t> pick_choice(row.begin(), row.end());
    return static_cast<double>(pick_choice(rng));
  }
  // Rejection from the kernel's normal: every kernel is centred inside the range and no wider
  // than it, so at least a third of the draws land inside.
  const double low = param.internal_low(), high = param.internal_high();
  std::normal_distribution<double> normal(mus_[d][kernel], sigmas_[d][kernel]);
  double x = normal(rng);
  while (x < low || x > high) x = normal(rng);
  const double value = param.log ? std::exp(x) : x;
  if (param.kind == ParamKind::kFloat) return std::clamp(value, param.low, param.high);
  return std::clamp(std::round(value), param.low, param.high);
}

ParamValues ParzenEstimator::sample(std::mt19937_64& rng) const {
  std::discrete_distribution<size_t> pick_kernel(weights_.begin(), weights_.end());
  const size_t kernel = pick_kernel(rng);
  ParamValues point;
  for (size_t d = 0; d < space_.params.size(); ++d) point.push_back(sample_kernel(d, kernel, rng));
  return point;
}

double ParzenEstimator::kernel_log_pdf(size_t d, size_t kernel, double value) const {
  const ParamSpec& param = space_.params[d];
  if (param.kind == ParamKind::kCategorical) {
    return std::log(choice_probabilities_[d][kernel][static_cast<size_t>(value)]);
  }
  const double low = param.internal_low(), high = param.internal_high();
  const double mu = mus_[d][kernel], sigma = sigmas_[d][kernel];
  const double log_mass = log_gauss_mass((low - mu) / sigma, (high - mu) / sigma);
  if (param.kind == ParamKind::kInt) {
    double left = value - 0.5, right = value + 0.5;
    if (param.log) left = std::log(left), right = std::log(right);
    return log_gauss_mass((left - mu) / sigma, (right - mu) / sigma) - log_mass;
  }
  const double x = param.log ? std::log(value) : value;
  const double z = (x - mu) / sigma;
  return -0.5 * z * z - kLogSqrt2Pi - std::log(sigma) - log_mass;
}

double ParzenEstimator::log_pdf(const ParamValues& point) const {
  std::vector<double> terms(weights_.size());
  for (size_t k = 0; k < weights_.size(); ++k) {
    terms[k] = std::log(weights_[k]);
    for (size_t d = 0; d < space_.params.size(); ++d) terms[k] += kernel_log_pdf(d, k, point[d]);
  }
  return log_sum_exp(terms);
}

}  // namespace course::hpo
