// The reference versions of the search's rules (see rules.h); the day-3 exercises TP3.8-TP3.10
// write the same, and the check compares both.
#include "common/hpo/rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace course::hpo {
namespace {

// Pruned trials rank by how far they got (the last step, larger first), then by the value
// they reported there; a pruned trial that reported nothing ranks last.
std::tuple<double, double> pruned_rank(const Trial& trial, Direction direction) {
  if (trial.intermediate.empty()) return {1.0, 0.0};
  const auto& [step, value] = *trial.intermediate.rbegin();
  if (std::isnan(value)) return {-step, std::numeric_limits<double>::infinity()};
  return {-step, direction == Direction::kMinimize ? value : -value};
}

double nan_best(const std::map<int, double>& values, Direction direction) {
  double best = std::nan("");
  for (const auto& [step, value] : values) {
    if (!std::isnan(value) && (std::isnan(best) || better(direction, value, best))) best = value;
  }
  return best;
}

}  // namespace

double nan_percentile(std::vector<double> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
               values.end());
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double position = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  const double a = values[lower], b = values[upper];
  // Weighted, not a + t (b - a): -inf and 3 meet at -inf, not at -inf + inf = NaN.
  if (fraction == 0 || a == b) return a;
  return (1 - fraction) * a + fraction * b;
}

TrialSplit split_trials(const std::vector<Trial>& trials, Direction direction, int n_below,
                        bool include_running) {
  std::vector<const Trial*> complete, pruned, running;
  for (const Trial& trial : trials) {
    if (trial.state == TrialState::kComplete) complete.push_back(&trial);
    if (trial.state == TrialState::kPruned) pruned.push_back(&trial);
    if (trial.state == TrialState::kRunning && include_running) running.push_back(&trial);
  }
  std::stable_sort(complete.begin(), complete.end(), [&](const Trial* a, const Trial* b) {
    return better(direction, *a->value, *b->value);
  });
  std::stable_sort(pruned.begin(), pruned.end(), [&](const Trial* a, const Trial* b) {
    return pruned_rank(*a, direction) < pruned_rank(*b, direction);
  });
  TrialSplit split;
  size_t wanted = static_cast<size_t>(std::max(n_below, 0));
  for (const std::vector<const Trial*>* group : {&complete, &pruned}) {
    const size_t taken = std::min(wanted, group->size());
    split.below.insert(split.below.end(), group->begin(), group->begin() + taken);
    split.above.insert(split.above.end(), group->begin() + taken, group->end());
    wanted -= taken;
  }
  split.above.insert(split.above.end(), running.begin(), running.end());
  const auto by_number = [](const Trial* a, const Trial* b) { return a->number < b->number; };
  std::sort(split.below.begin(), split.below.end(), by_number);
  std::sort(split.above.begin(), split.above.end(), by_number);
  return split;
}

bool promotable_to_next_rung(double value, std::vector<double> competing, int reduction_factor,
                             Direction direction) {
  size_t index = competing.size() / static_cast<size_t>(reduction_factor);
  index = index == 0 ? 0 : index - 1;
  std::sort(competing.begin(), competing.end());
  if (direction == Direction::kMaximize) return value >= competing[competing.size() - 1 - index];
  return value <= competing[index];
}

bool median_prunes(const Trial& trial, int step, const std::vector<const Trial*>& complete,
                   Direction direction) {
  const double best = nan_best(trial.intermediate, direction);
  if (std::isnan(best)) return true;
  std::vector<double> at_step;
  for (const Trial* other : complete) {
    const auto found = other->intermediate.find(step);
    if (found != other->intermediate.end()) at_step.push_back(found->second);
  }
  const double median = nan_percentile(at_step, 50.0);
  return !std::isnan(median) && better(direction, median, best);
}

}  // namespace course::hpo
