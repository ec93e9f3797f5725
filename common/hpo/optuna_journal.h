// A study written as Optuna's journal: the JSON lines that optuna.storages.JournalStorage keeps
// in a JournalFileBackend's file, so that `optuna.load_study(storage=JournalStorage(
// JournalFileBackend(FILE)))` and `optuna-dashboard FILE` open the course's studies. One
// CREATE_STUDY line (the direction), one SET_STUDY_USER_ATTR line for each of the study's
// settings (space, sampler, pruner, seed, objective), then for each trial in number order one
// CREATE_TRIAL line carrying the whole trial, as Optuna's own copies of trials are written: its
// state, value, start and end times, parameters with their distributions, intermediate values,
// and as user attributes its worker and the rungs successive halving recorded.
#pragma once

#include <string>
#include <vector>

#include "common/hpo/study_storage.h"
#include "common/hpo/trial.h"

namespace course::hpo {

// The journal's lines, without their '\n'. Throws course::Error when the trials' numbers are not
// 0, 1, 2, ... (Optuna numbers trials by their order in the journal).
std::vector<std::string> optuna_journal_lines(const StudyConfig& config,
                                              const std::vector<Trial>& trials);

// The journal written to `path` (replaced whole: written beside it, then renamed into place).
void write_optuna_journal(const std::string& path, const StudyConfig& config,
                          const std::vector<Trial>& trials);

}  // namespace course::hpo
