// The objectives of the HPO tool (see hpo_objective.h).
#include "day3_data/hpo_tool/hpo_objective.h"

#include "common/core/error.h"
#include "common/hpo/objectives.h"
#include "common/hpo/study_report.h"
#include "day3_data/trainer.h"

namespace day3 {
namespace hpo = course::hpo;
namespace {

constexpr const char* kLabPrefix = "lab";

bool is_lab(const std::string& objective) {
  return objective == kLabPrefix || objective.rfind(std::string(kLabPrefix) + " ", 0) == 0;
}

}  // namespace

std::vector<std::string> lab_arguments(const hpo::StudyConfig& config, const hpo::Trial& trial) {
  std::vector<std::string> arguments = split_words(config.objective);
  arguments[0] = "lab";
  for (const std::string& word : split_words(hpo::trial_flags(config.space, trial))) {
    arguments.push_back(word);
  }
  return arguments;
}

void check_objective(const hpo::StudyConfig& config) {
  if (is_lab(config.objective)) {
    COURSE_CHECK(config.direction == hpo::Direction::kMaximize,
                 "the lab's objective is its test accuracy: the study must maximize");
    // Every parameter at its low end: a misnamed parameter or bad fixed flag fails here.
    hpo::Trial lowest;
    for (const hpo::ParamSpec& param : config.space.params) lowest.params.push_back(param.low);
    parse_lab_words(lab_arguments(config, lowest));
    return;
  }
  hpo::synthetic_space(config.objective);  // throws for an unknown function
  const std::vector<hpo::ParamSpec>& params = config.space.params;
  COURSE_CHECK(params.size() == 2 && params[0].name == "x" && params[1].name == "y" &&
                   params[0].kind != hpo::ParamKind::kCategorical &&
                   params[1].kind != hpo::ParamKind::kCategorical,
               "the function ", config.objective, " takes numerical parameters x and y");
}

TrialOutcome evaluate_trial(hpo::Study& study, hpo::Trial& trial) {
  const hpo::StudyConfig& config = study.config();
  if (!is_lab(config.objective)) {
    return {hpo::TrialState::kComplete,
            hpo::synthetic_objective(config.objective, trial.params[0], trial.params[1])};
  }
  const LabOptions options = parse_lab_words(lab_arguments(config, trial));
  const LabResult result = run_lab(options, {.after_epoch = [&](int64_t epoch, double accuracy) {
                                     return !study.report(trial, static_cast<int>(epoch), accuracy);
                                   }});
  if (result.ended_early) return {hpo::TrialState::kPruned, std::nullopt};
  COURSE_CHECK(result.test_accuracy, "the lab run ended without a test accuracy (--test?)");
  return {hpo::TrialState::kComplete, *result.test_accuracy};
}

}  // namespace day3
