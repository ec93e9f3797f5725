// Temperature, top-k and top-p on the host.
#include "common/models/gpt/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/core/error.h"

namespace course::nn {

void check_sampling(const SamplingOptions& o) {
  COURSE_CHECK(o.temperature >= 0, "the sampling temperature must not be negative, got ",
               o.temperature);
  COURSE_CHECK(o.top_k >= 0, "top-k must not be negative (0: every token), got ", o.top_k);
  COURSE_CHECK(o.top_p > 0 && o.top_p <= 1, "top-p must be in (0, 1], got ", o.top_p);
}

std::vector<double> sampling_distribution(const std::vector<float>& logits,
                                          const SamplingOptions& o) {
  check_sampling(o);
  COURSE_CHECK(!logits.empty(), "sampling from no logits");
  std::vector<double> p(logits.size(), 0.0);
  // Most likely first; equals in index order, so greedy takes the first of equals.
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  if (o.temperature == 0) {
    p[order.front()] = 1.0;
    return p;
  }
  const size_t kept_k =
      o.top_k > 0 ? std::min(order.size(), static_cast<size_t>(o.top_k)) : order.size();
  double total = 0;
  for (size_t r = 0; r < kept_k; ++r) {
    const size_t i = order[r];
    p[i] = std::exp((static_cast<double>(logits[i]) - logits[order.front()]) / o.temperature);
    total += p[i];
  }
  // The nucleus: the fewest most likely tokens whose share reaches top_p.
  double cumulative = 0;
  size_t kept = 0;
  while (kept < kept_k && cumulative < o.top_p * total) cumulative += p[order[kept++]];
  for (size_t r = kept; r < kept_k; ++r) p[order[r]] = 0.0;
  for (double& v : p) v /= cumulative;
  return p;
}

int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& options,
                     std::mt19937& rng) {
  const std::vector<double> p = sampling_distribution(logits, options);
  return std::discrete_distribution<int32_t>(p.begin(), p.end())(rng);
}

}  // namespace course::nn
