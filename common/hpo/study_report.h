// What people read of a study: its state in a few lines, the best trial as flags to rerun it,
// every trial as a table, and CSV files of its trials and intermediate values (the plots'
// input, and anyone's spreadsheet's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/hpo/study_storage.h"

namespace course::hpo {

// The best complete trial in the study's direction, if any is complete.
std::optional<Trial> best_trial(const std::vector<Trial>& trials, Direction direction);

// "--lr 0.0123 --batch-size 64": a trial's parameters as command-line flags.
std::string trial_flags(const SearchSpace& space, const Trial& trial);

// The study's configuration, its trials counted by state, and its best trial.
std::string status_text(const StudyConfig& config, const std::vector<Trial>& trials);

// One line per trial: number, state, value, steps reported, seconds, worker, parameters.
std::string trials_table(const StudyConfig& config, const std::vector<Trial>& trials);

// trials.csv (number, state, value, best so far, seconds since the study's first trial,
// parameters) and intermediate.csv (number, state, step, value) in `folder`.
void write_study_csv(const StudyConfig& config, const std::vector<Trial>& trials,
                     const std::string& folder);

}  // namespace course::hpo
