// What a hyper-parameter study's worker evaluates for one trial: a synthetic function of
// (x, y) (seconds per study), or a run of the day-3 lab with the trial's parameters as flags,
// reporting its test accuracy after every epoch and stopped when the pruner says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/hpo/study.h"

namespace day3 {

struct TrialOutcome {
  course::hpo::TrialState state = course::hpo::TrialState::kComplete;
  std::optional<double> value;
};

// Refuses, before any trial runs, an objective the study cannot evaluate: an unknown
// function, a space a function cannot take, lab flags or parameter names the lab refuses.
void check_objective(const course::hpo::StudyConfig& config);

// Runs the trial's objective, reporting intermediate values through `study`.
TrialOutcome evaluate_trial(course::hpo::Study& study, course::hpo::Trial& trial);

// The lab's command line of a trial: the study's fixed flags, then the trial's parameters.
std::vector<std::string> lab_arguments(const course::hpo::StudyConfig& config,
                                       const course::hpo::Trial& trial);

}  // namespace day3
