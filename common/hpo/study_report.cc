// Text and CSV views of a study (see study_report.h).
#include "common/hpo/study_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "common/core/error.h"

namespace course::hpo {
namespace {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path);
  COURSE_CHECK(out, "cannot write ", path);
  out.precision(17);
  return out;
}

}  // namespace

std::optional<Trial> best_trial(const std::vector<Trial>& trials, Direction direction) {
  std::optional<Trial> best;
  for (const Trial& trial : trials) {
    if (trial.state != TrialState::kComplete || !trial.value || std::isnan(*trial.value)) continue;
    if (!best || better(direction, *trial.value, *best->value)) best = trial;
  }
  return best;
}

std::string trial_flags(const SearchSpace& space, const Trial& trial) {
  std::string flags;
  for (size_t i = 0; i < space.params.size(); ++i) {
    flags += (i ? " --" : "--") + space.params[i].name + " " +
             format_value(space.params[i], trial.params.at(i));
  }
  return flags;
}

std::string status_text(const StudyConfig& config, const std::vector<Trial>& trials) {
  std::map<TrialState, int> counts;
  for (const Trial& trial : trials) ++counts[trial.state];
  std::ostringstream out;
  out << "study " << config.name << ": " << to_string(config.direction) << " " << config.objective
      << "\n  space " << to_string(config.space) << "\n  sampler " << config.sampler << ", pruner "
      << config.pruner << ", seed " << config.seed << "\n  " << trials.size()
      << " trials: " << counts[TrialState::kComplete] << " complete, "
      << counts[TrialState::kPruned] << " pruned, " << counts[TrialState::kFail] << " failed, "
      << counts[TrialState::kRunning] << " running\n";
  if (const std::optional<Trial> best = best_trial(trials, config.direction)) {
    out << "  best: trial " << best->number << ", value " << format_number(*best->value) << ": "
        << trial_flags(config.space, *best) << "\n";
  }
  return out.str();
}

std::string trials_table(const StudyConfig& config, const std::vector<Trial>& trials) {
  std::ostringstream out;
  out << "trial state     value        steps  seconds  worker                parameters\n";
  for (const Trial& trial : trials) {
    char line[160];
    const double seconds = trial.finished ? *trial.finished - trial.started : NAN;
    std::snprintf(line, sizeof line, "%5d %-9s %-12s %5zu %8.1f  %-20s  ", trial.number,
                  to_string(trial.state), trial.value ? format_number(*trial.value).c_str() : "-",
                  trial.intermediate.size(), seconds, trial.worker.substr(0, 20).c_str());
    out << line << trial_flags(config.space, trial) << "\n";
  }
  return out.str();
}

void write_study_csv(const StudyConfig& config, const std::vector<Trial>& trials,
                     const std::string& folder) {
  std::ofstream table = open_output(folder + "/trials.csv");
  table << "number,state,value,best_so_far,seconds";
  for (const ParamSpec& param : config.space.params) table << "," << param.name;
  table << "\n";
  const double start = trials.empty() ? 0 : trials.front().started;
  std::optional<double> best;
  for (const Trial& trial : trials) {
    if (trial.state == TrialState::kComplete && trial.value &&
        (!best || better(config.direction, *trial.value, *best))) {
      best = trial.value;
    }
    table << trial.number << "," << to_string(trial.state) << ","
          << (trial.value ? format_number(*trial.value) : "") << ","
          << (best ? format_number(*best) : "") << ","
          << format_number(trial.finished.value_or(trial.started) - start);
    for (size_t i = 0; i < config.space.params.size(); ++i) {
      const ParamSpec& param = config.space.params[i];
      // Categoricals are written as their index (the plots' axis) and named in the header.
      table << ","
            << (param.kind == ParamKind::kCategorical ? format_number(trial.params.at(i))
                                                      : format_value(param, trial.params.at(i)));
    }
    table << "\n";
  }
  std::ofstream steps = open_output(folder + "/intermediate.csv");
  steps << "number,state,step,value\n";
  for (const Trial& trial : trials) {
    for (const auto& [step, value] : trial.intermediate) {
      steps << trial.number << "," << to_string(trial.state) << "," << step << ","
            << format_number(value) << "\n";
    }
  }
}

}  // namespace course::hpo
