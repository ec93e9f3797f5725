// The pruners (see pruner.h for each rule).
#include "common/hpo/pruner.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/core/error.h"

namespace course::hpo {
namespace {

int completed_rungs(const Trial& trial) {
  int rung = 0;
  while (trial.rungs.count(rung)) ++rung;
  return rung;
}

std::vector<double> recorded_at_rung(const std::vector<Trial>& trials, int rung) {
  std::vector<double> values;
  for (const Trial& trial : trials) {
    const auto found = trial.rungs.find(rung);
    if (found != trial.rungs.end()) values.push_back(found->second);
  }
  return values;
}

// The longest complete trial's last step, if any trial is complete.
std::optional<int> longest_complete(const std::vector<Trial>& trials) {
  std::optional<int> longest;
  for (const Trial& trial : trials) {
    if (trial.state != TrialState::kComplete || !trial.last_step()) continue;
    longest = std::max(longest.value_or(*trial.last_step()), *trial.last_step());
  }
  return longest;
}

long long integer_power(int base, int exponent) {
  long long result = 1;
  for (int i = 0; i < exponent; ++i) result *= base;
  return result;
}

}  // namespace

PruneDecision MedianPruner::decide(const Trial& trial, const std::vector<Trial>& others,
                                   Direction direction) const {
  std::vector<const Trial*> complete;
  for (const Trial& other : others) {
    if (other.state == TrialState::kComplete) complete.push_back(&other);
  }
  const std::optional<int> step = trial.last_step();
  if (complete.empty() || static_cast<int>(complete.size()) < options_.n_startup_trials || !step ||
      *step < options_.n_warmup_steps) {
    return {};
  }
  return {rule_(trial, *step, complete, direction), {}};
}

PruneDecision SuccessiveHalvingPruner::decide(const Trial& trial, const std::vector<Trial>& others,
                                              Direction direction) const {
  PruneDecision decision;
  const std::optional<int> step = trial.last_step();
  if (!step) return decision;
  int min_resource = options_.min_resource;
  if (min_resource == 0) {
    const std::optional<int> longest = longest_complete(others);
    if (!longest) return decision;
    min_resource = std::max(*longest / 100, 1);
  }
  const double value = trial.intermediate.at(*step);
  for (int rung = completed_rungs(trial);; ++rung) {
    const long long promotion_step =
        min_resource *
        integer_power(options_.reduction_factor, options_.min_early_stopping_rate + rung);
    if (*step < promotion_step) return decision;
    if (std::isnan(value)) {
      decision.prune = true;
      return decision;
    }
    decision.new_rungs[rung] = value;
    std::vector<double> competing = recorded_at_rung(others, rung);
    competing.push_back(value);
    if (!rule_(value, competing, options_.reduction_factor, direction)) {
      decision.prune = true;
      return decision;
    }
  }
}

int HyperbandPruner::bracket(int number, int n_brackets) const {
  std::vector<int> budgets;
  int total = 0;
  for (int s = 0; s < n_brackets; ++s) {
    const int rest = n_brackets - 1 - s;
    budgets.push_back(static_cast<int>(
        std::ceil(n_brackets * std::pow(options_.reduction_factor, rest) / (rest + 1))));
    total += budgets.back();
  }
  const std::string key = study_name_ + "_" + std::to_string(number);
  long long n = static_cast<long long>(
      crc32(0L, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size())) %
      static_cast<unsigned long>(total));
  for (int s = 0; s < n_brackets; ++s) {
    n -= budgets[s];
    if (n < 0) return s;
  }
  return n_brackets - 1;
}

PruneDecision HyperbandPruner::decide(const Trial& trial, const std::vector<Trial>& others,
                                      Direction direction) const {
  int max_resource = options_.max_resource;
  if (max_resource == 0) {
    const std::optional<int> longest = longest_complete(others);
    if (!longest) return {};
    max_resource = *longest + 1;
  }
  // The same floating-point logarithm as Optuna's, so both count the same brackets.
  const int n_brackets = static_cast<int>(std::floor(
                             std::log(static_cast<double>(max_resource) / options_.min_resource) /
                             std::log(static_cast<double>(options_.reduction_factor)))) +
                         1;
  const int own = bracket(trial.number, n_brackets);
  std::vector<Trial> same_bracket;
  for (const Trial& other : others) {
    if (bracket(other.number, n_brackets) == own) same_bracket.push_back(other);
  }
  SuccessiveHalvingOptions bracket_options;
  bracket_options.min_resource = options_.min_resource;
  bracket_options.reduction_factor = options_.reduction_factor;
  bracket_options.min_early_stopping_rate = own;
  return SuccessiveHalvingPruner(bracket_options, rule_).decide(trial, same_bracket, direction);
}

PruneDecision AshaPruner::decide(const Trial& trial, const std::vector<Trial>& others,
                                 Direction direction) const {
  PruneDecision decision;
  const std::optional<int> step = trial.last_step();
  if (!step) return decision;
  const double sign = direction == Direction::kMaximize ? 1.0 : -1.0;
  const double score = sign * trial.intermediate.at(*step);
  const int n_rungs =
      static_cast<int>(std::log(static_cast<double>(options_.max_t) / options_.grace_period) /
                           std::log(static_cast<double>(options_.reduction_factor)) +
                       1);
  for (int rung = n_rungs - 1; rung >= 0; --rung) {
    const long long milestone =
        options_.grace_period * integer_power(options_.reduction_factor, rung);
    if (*step < milestone || trial.rungs.count(rung)) continue;
    std::vector<double> recorded = recorded_at_rung(others, rung);
    for (double& value : recorded) value *= sign;
    const double cutoff = nan_percentile(recorded, (1.0 - 1.0 / options_.reduction_factor) * 100);
    decision.prune = !std::isnan(cutoff) && score < cutoff;
    decision.new_rungs[rung] = trial.intermediate.at(*step);
    break;
  }
  return decision;
}

namespace {

// Sets the integer fields named in "key=value,..." (`fields` maps each known key to its
// field), refusing unknown keys and values that are not non-negative integers.
void parse_settings(const std::string& spec, const std::string& text,
                    const std::map<std::string, int*>& fields) {
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto equals = item.find('=');
    const auto field = fields.find(item.substr(0, equals));
    COURSE_CHECK(equals != std::string::npos && field != fields.end(), "pruner '", spec,
                 "': unknown option '", item, "'");
    char* end = nullptr;
    const long value = std::strtol(item.c_str() + equals + 1, &end, 10);
    COURSE_CHECK(end != item.c_str() + equals + 1 && *end == '\0' && value >= 0, "pruner '", spec,
                 "': '", item, "' needs a non-negative integer");
    *field->second = static_cast<int>(value);
  }
}

}  // namespace

std::unique_ptr<Pruner> make_pruner(const std::string& spec, const std::string& study_name,
                                    const SearchRules& rules) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "none" && rest.empty()) return std::make_unique<NopPruner>();
  if (kind == "median") {
    MedianPrunerOptions median;
    parse_settings(spec, rest,
                   {{"startup", &median.n_startup_trials}, {"warmup", &median.n_warmup_steps}});
    return std::make_unique<MedianPruner>(median, rules.median);
  }
  if (kind == "sh") {
    SuccessiveHalvingOptions sh;
    parse_settings(spec, rest,
                   {{"min", &sh.min_resource},
                    {"eta", &sh.reduction_factor},
                    {"rate", &sh.min_early_stopping_rate}});
    COURSE_CHECK(sh.reduction_factor >= 2, "pruner '", spec, "': eta must be at least 2");
    return std::make_unique<SuccessiveHalvingPruner>(sh, rules.promotable);
  }
  if (kind == "hyperband") {
    HyperbandOptions hyperband;
    parse_settings(spec, rest,
                   {{"min", &hyperband.min_resource},
                    {"max", &hyperband.max_resource},
                    {"eta", &hyperband.reduction_factor}});
    COURSE_CHECK(
        hyperband.reduction_factor >= 2 && hyperband.min_resource >= 1 &&
            (hyperband.max_resource == 0 || hyperband.max_resource > hyperband.min_resource),
        "pruner '", spec, "': needs eta >= 2, min >= 1 and max > min");
    return std::make_unique<HyperbandPruner>(hyperband, study_name, rules.promotable);
  }
  if (kind == "asha") {
    AshaOptions asha;
    parse_settings(
        spec, rest,
        {{"grace", &asha.grace_period}, {"eta", &asha.reduction_factor}, {"max", &asha.max_t}});
    COURSE_CHECK(
        asha.reduction_factor >= 2 && asha.grace_period >= 1 && asha.max_t >= asha.grace_period,
        "pruner '", spec, "': needs eta >= 2, grace >= 1 and max >= grace");
    return std::make_unique<AshaPruner>(asha);
  }
  COURSE_FAIL("unknown pruner '", spec, "' (none, median, sh, hyperband or asha, with ",
              "optional :key=value,... settings)");
}

}  // namespace course::hpo
