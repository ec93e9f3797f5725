// Optuna's journal of a study (optuna_journal.h), its operations as Optuna 5's
// optuna/storages/journal/_storage.py writes and replays them.
#include "common/hpo/optuna_journal.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/core/atomic_file.h"
#include "common/core/error.h"

namespace course::hpo {

namespace {

using nlohmann::json;

// JournalOperation's codes, and TrialState's and StudyDirection's values.
constexpr int kCreateStudy = 0, kSetStudyUserAttr = 2, kCreateTrial = 4;
constexpr const char* kWorker = "course-hpo-export";

int optuna_state(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return 0;
    case TrialState::kComplete:
      return 1;
    case TrialState::kPruned:
      return 2;
    case TrialState::kFail:
      return 3;
  }
  COURSE_FAIL("trial state ", static_cast<int>(state), " has no Optuna state");
}

// Seconds since the epoch as ISO 8601 in UTC with microseconds (Optuna reads it with
// datetime.fromisoformat and shows it in local time).
std::string iso_time(double seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(seconds));
  const auto micros = static_cast<long>(std::llround((seconds - std::floor(seconds)) * 1e6));
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[48];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                std::min(micros, 999999L));
  return text;
}

// distribution_to_json(dist): the distribution's class and attributes, as a JSON string.
std::string distribution_json(const ParamSpec& param) {
  json attributes;
  const char* name = "FloatDistribution";
  if (param.kind == ParamKind::kCategorical) {
    name = "CategoricalDistribution";
    attributes = {{"choices", param.choices}};
  } else if (param.kind == ParamKind::kInt) {
    name = "IntDistribution";
    attributes = {{"log", param.log},
                  {"low", std::llround(param.low)},
                  {"high", std::llround(param.high)},
                  {"step", 1}};
  } else {
    attributes = {{"step", nullptr}, {"low", param.low}, {"high", param.high}, {"log", param.log}};
  }
  return json{{"name", name}, {"attributes", attributes}}.dump();
}

json trial_line(const SearchSpace& space, const Trial& trial) {
  json distributions = json::object(), params = json::object();
  for (size_t i = 0; i < space.params.size() && i < trial.params.size(); ++i) {
    const ParamSpec& param = space.params[i];
    distributions[param.name] = distribution_json(param);
    // Optuna's internal form: the value, an integer's as a float, a categorical's index.
    params[param.name] = param.kind == ParamKind::kFloat
                             ? trial.params[i]
                             : static_cast<double>(std::llround(trial.params[i]));
  }
  json intermediate = json::object(), rungs = json::object();
  for (const auto& [step, value] : trial.intermediate) intermediate[std::to_string(step)] = value;
  for (const auto& [rung, value] : trial.rungs) rungs[std::to_string(rung)] = value;
  json line = {{"op_code", kCreateTrial},
               {"worker_id", kWorker},
               {"study_id", 0},
               {"state", optuna_state(trial.state)},
               {"value", trial.value ? json(*trial.value) : json(nullptr)},
               {"values", nullptr},
               {"datetime_start", iso_time(trial.started)},
               {"distributions", distributions},
               {"params", params},
               {"user_attrs", {{"worker", trial.worker}, {"rungs", rungs}}},
               {"system_attrs", json::object()},
               {"intermediate_values", intermediate}};
  if (trial.finished) line["datetime_complete"] = iso_time(*trial.finished);
  return line;
}

}  // namespace

std::vector<std::string> optuna_journal_lines(const StudyConfig& config,
                                              const std::vector<Trial>& trials) {
  std::vector<std::string> lines;
  const int direction = config.direction == Direction::kMinimize ? 1 : 2;
  lines.push_back(json{
      {"op_code", kCreateStudy},
      {"worker_id", kWorker},
      {"study_name", config.name},
      {"directions",
       {direction}}}.dump());
  const std::vector<std::pair<std::string, json>> settings = {
      {"search_space", to_string(config.space)},
      {"sampler", config.sampler},
      {"pruner", config.pruner},
      {"seed", config.seed},
      {"objective", config.objective}};
  for (const auto& [key, value] : settings) {
    lines.push_back(json{{"op_code", kSetStudyUserAttr},
                         {"worker_id", kWorker},
                         {"study_id", 0},
                         {"user_attr", {{key, value}}}}
                        .dump());
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    COURSE_CHECK(trials[i].number == static_cast<int>(i), "study ", config.name, ": trial ",
                 trials[i].number, " where trial ", i,
                 " was expected (Optuna numbers trials by their order)");
    lines.push_back(trial_line(config.space, trials[i]).dump());
  }
  return lines;
}

void write_optuna_journal(const std::string& path, const StudyConfig& config,
                          const std::vector<Trial>& trials) {
  std::string text;
  for (const std::string& line : optuna_journal_lines(config, trials)) text += line + '\n';
  write_file_atomically(path, text, "the Optuna journal");
}

}  // namespace course::hpo
