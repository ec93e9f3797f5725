// A study's plots as PNG files, drawn by gnuplot (setup.sh installs gnuplot-nox):
//   history.png       every complete trial's value against its number, the best so far as a
//                     line (Optuna's optimisation history);
//   intermediate.png  every trial's reported values against the step, pruned trials apart
//                     (what the pruner saw; only when trials reported any);
//   slice.png         the value against each parameter, coloured by trial number (where the
//                     sampler searched and where the good values are).
//   contour.png       the value over each pair of numerical parameters, interpolated between
//                     the trials (Optuna's contour plot; with two such parameters and three
//                     complete trials at least).
// The CSV files of study_report.h are written beside them.
#pragma once

#include <string>
#include <vector>

#include "common/hpo/study_storage.h"

namespace course::hpo {

// Writes the CSV files and the PNGs into `folder`; returns the PNGs' paths.
std::vector<std::string> write_study_plots(const StudyConfig& config,
                                           const std::vector<Trial>& trials,
                                           const std::string& folder);

}  // namespace course::hpo
