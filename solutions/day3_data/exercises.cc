// Day 3 exercises TP3.1-TP3.10 (the lab sheet is day3_data/README.md).
// solutions/day3_data/exercises.cc is the complete version; day3_data/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day3_data/exercises.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/core/exercise.h"
#include "common/kernels/elementwise.h"

namespace day3 {

course::CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng) {
  // BEGIN EXERCISE TP3.1: sqrt(1 - lambda) box at a random pixel, clipped; lambda from its area
  const double ratio = std::sqrt(1.0 - lambda);
  const int64_t box_h = static_cast<int64_t>(height * ratio);
  const int64_t box_w = static_cast<int64_t>(width * ratio);
  const int64_t centre_y = std::uniform_int_distribution<int64_t>(0, height - 1)(rng);
  const int64_t centre_x = std::uniform_int_distribution<int64_t>(0, width - 1)(rng);
  const int64_t top = std::max<int64_t>(centre_y - box_h / 2, 0);
  const int64_t bottom = std::min(centre_y - box_h / 2 + box_h, height);
  const int64_t left = std::max<int64_t>(centre_x - box_w / 2, 0);
  const int64_t right = std::min(centre_x - box_w / 2 + box_w, width);
  course::CutMixCut cut;
  if (bottom > top && right > left) {
    cut.box = {static_cast<int32_t>(top), static_cast<int32_t>(bottom), static_cast<int32_t>(left),
               static_cast<int32_t>(right)};
  }
  const double box_area = static_cast<double>(cut.box[1] - cut.box[0]) * (cut.box[3] - cut.box[2]);
  cut.lambda = static_cast<float>(1.0 - box_area / static_cast<double>(height * width));
  return cut;
  // END EXERCISE
}

std::vector<float> mixed_targets(const std::vector<int64_t>& labels,
                                 const std::vector<float>& lambdas, int64_t classes,
                                 float smoothing) {
  // BEGIN EXERCISE TP3.2: lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), row by row
  const int64_t n = static_cast<int64_t>(labels.size());
  const float off = smoothing / static_cast<float>(classes);
  const float on = 1.0f - smoothing + off;
  std::vector<float> targets(n * classes, off);
  for (int64_t i = 0; i < n; ++i) {
    float* row = targets.data() + i * classes;
    row[labels[i]] += lambdas[i] * (on - off);
    row[labels[n - 1 - i]] += (1.0f - lambdas[i]) * (on - off);
  }
  return targets;
  // END EXERCISE
}

Tensor soft_target_gradient(const course::CrossEntropyOutput& forward, const Tensor& targets,
                            float grad_loss) {
  // BEGIN EXERCISE TP3.3: (softmax - targets) times grad_loss / N
  Tensor gradient =
      course::zeros(forward.probs.shape(), course::DType::kF32, forward.probs.device());
  course::axpy_(1.0f, forward.probs, gradient);
  course::axpy_(-1.0f, targets, gradient);
  course::scale_(gradient, grad_loss / static_cast<float>(forward.probs.size(0)));
  return gradient;
  // END EXERCISE
}

std::vector<course::TarSample> group_members(const std::vector<course::TarMember>& members) {
  // BEGIN EXERCISE TP3.4: one sample per run of consecutive members with the same key
  std::vector<course::TarSample> samples;
  for (const course::TarMember& member : members) {
    const size_t name_start = member.name.find_last_of('/') + 1;  // 0 without a folder
    const size_t dot = member.name.find('.', name_start);
    const std::string key = member.name.substr(0, dot);
    if (samples.empty() || samples.back().key != key) samples.push_back({key, {}});
    samples.back().parts[dot == std::string::npos ? "" : member.name.substr(dot + 1)] = member;
  }
  return samples;
  // END EXERCISE
}

std::vector<int64_t> quasi_random_pages(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, std::mt19937& rng) {
  // BEGIN EXERCISE TP3.5: shuffle the pages, then the samples of every pages_in_memory pages
  std::map<int64_t, std::vector<int64_t>> samples_of_page;
  for (size_t i = 0; i < sample_pages.size(); ++i) {
    samples_of_page[sample_pages[i]].push_back(static_cast<int64_t>(i));
  }
  std::vector<const std::vector<int64_t>*> pages;
  for (const auto& entry : samples_of_page) pages.push_back(&entry.second);
  std::shuffle(pages.begin(), pages.end(), rng);
  std::vector<int64_t> order;
  order.reserve(sample_pages.size());
  for (size_t group = 0; group < pages.size(); group += pages_in_memory) {
    const auto group_begin = static_cast<std::ptrdiff_t>(order.size());
    const size_t group_end = std::min(pages.size(), group + static_cast<size_t>(pages_in_memory));
    for (size_t p = group; p < group_end; ++p) {
      order.insert(order.end(), pages[p]->begin(), pages[p]->end());
    }
    std::shuffle(order.begin() + group_begin, order.end(), rng);
  }
  return order;
  // END EXERCISE
}

course::hpo::TrialSplit split_trials(const std::vector<course::hpo::Trial>& trials,
                                     course::hpo::Direction direction, int n_below,
                                     bool include_running) {
  using course::hpo::Trial;
  using course::hpo::TrialState;
  // BEGIN EXERCISE TP3.8: rank complete, then pruned trials; the first n_below are below
  // A trial's rank: complete before pruned; complete by value, pruned by last step (larger
  // first) then last value; values negated when maximising, so smaller is always better.
  const double sign = direction == course::hpo::Direction::kMinimize ? 1.0 : -1.0;
  struct Ranked {
    int group;
    double first, second;
    const Trial* trial;
  };
  std::vector<Ranked> ranked;
  course::hpo::TrialSplit split;
  for (const Trial& trial : trials) {
    if (trial.state == TrialState::kComplete) {
      ranked.push_back({0, sign * *trial.value, 0.0, &trial});
    } else if (trial.state == TrialState::kPruned && trial.intermediate.empty()) {
      ranked.push_back({1, 1.0, 0.0, &trial});
    } else if (trial.state == TrialState::kPruned) {
      const auto& [step, value] = *trial.intermediate.rbegin();
      ranked.push_back(
          {1, -static_cast<double>(step), std::isnan(value) ? INFINITY : sign * value, &trial});
    } else if (trial.state == TrialState::kRunning && include_running) {
      split.above.push_back(&trial);
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(a.group, a.first, a.second) < std::tie(b.group, b.first, b.second);
  });
  for (size_t i = 0; i < ranked.size(); ++i) {
    (static_cast<int>(i) < n_below ? split.below : split.above).push_back(ranked[i].trial);
  }
  const auto by_number = [](const Trial* a, const Trial* b) { return a->number < b->number; };
  std::sort(split.below.begin(), split.below.end(), by_number);
  std::sort(split.above.begin(), split.above.end(), by_number);
  return split;
  // END EXERCISE
}

bool promotable_to_next_rung(double value, std::vector<double> competing, int reduction_factor,
                             course::hpo::Direction direction) {
  // BEGIN EXERCISE TP3.9: at least as good as the floor(n / eta)-th best (the best when 0)
  const size_t kept = std::max<size_t>(competing.size() / static_cast<size_t>(reduction_factor), 1);
  std::sort(competing.begin(), competing.end());
  if (direction == course::hpo::Direction::kMaximize)
    std::reverse(competing.begin(), competing.end());
  return !course::hpo::better(direction, competing[kept - 1], value);
  // END EXERCISE
}

bool median_prunes(const course::hpo::Trial& trial, int step,
                   const std::vector<const course::hpo::Trial*>& complete,
                   course::hpo::Direction direction) {
  // BEGIN EXERCISE TP3.10: the trial's best so far against the complete trials' median at step
  std::vector<double> own;
  for (const auto& [reported_step, value] : trial.intermediate) {
    if (!std::isnan(value)) own.push_back(value);
  }
  if (own.empty()) return true;
  const bool minimize = direction == course::hpo::Direction::kMinimize;
  const double best = minimize ? *std::min_element(own.begin(), own.end())
                               : *std::max_element(own.begin(), own.end());
  std::vector<double> at_step;
  for (const course::hpo::Trial* other : complete) {
    const auto found = other->intermediate.find(step);
    if (found != other->intermediate.end() && !std::isnan(found->second)) {
      at_step.push_back(found->second);
    }
  }
  if (at_step.empty()) return false;
  std::sort(at_step.begin(), at_step.end());
  const size_t middle = at_step.size() / 2;
  const double median =
      at_step.size() % 2 ? at_step[middle] : (at_step[middle - 1] + at_step[middle]) / 2;
  return minimize ? best > median : best < median;
  // END EXERCISE
}

course::hpo::SearchRules search_rules() {
  return {.split = split_trials, .promotable = promotable_to_next_rung, .median = median_prunes};
}

std::vector<float> sweep_rates(float first, float last, int64_t count) {
  // BEGIN EXERCISE TP3.6: geometric steps from first to last, both ends included
  std::vector<float> rates(count);
  const double ratio = static_cast<double>(last) / first;
  for (int64_t i = 0; i < count; ++i) {
    rates[i] = static_cast<float>(first * std::pow(ratio, static_cast<double>(i) / (count - 1)));
  }
  return rates;
  // END EXERCISE
}

std::optional<float> suggest_rate(const std::vector<float>& rates,
                                  const std::vector<double>& mean_losses) {
  // BEGIN EXERCISE TP3.7: a tenth of the rate of the lowest finite loss
  std::optional<size_t> lowest;
  for (size_t i = 0; i < rates.size(); ++i) {
    if (std::isnan(mean_losses[i])) continue;
    if (!lowest || mean_losses[i] < mean_losses[*lowest]) lowest = i;
  }
  if (!lowest) return std::nullopt;
  return rates[*lowest] / 10;
  // END EXERCISE
}

}  // namespace day3
