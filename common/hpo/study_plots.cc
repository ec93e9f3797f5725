// The study's plots through gnuplot (see study_plots.h). The data goes inline in the script
// (gnuplot's data blocks), one block per trial where lines must not join trials.
#include "common/hpo/study_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/core/error.h"
#include "common/core/gnuplot.h"
#include "common/hpo/study_report.h"

namespace course::hpo {
namespace {

bool complete(const Trial& trial) {
  return trial.state == TrialState::kComplete && trial.value && std::isfinite(*trial.value);
}

// Log scale when every value is positive and they span more than two decades.
bool wants_log_scale(const std::vector<double>& values) {
  if (values.empty()) return false;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return *low > 0 && *high / *low > 100;
}

std::string history_script(const StudyConfig& config, const std::vector<Trial>& trials,
                           const std::string& path) {
  std::ostringstream data, best_line;
  std::vector<double> values;
  std::optional<double> best;
  for (const Trial& trial : trials) {
    if (!complete(trial)) continue;
    values.push_back(*trial.value);
    data << trial.number << " " << *trial.value << "\n";
    if (!best || better(config.direction, *trial.value, *best)) best = trial.value;
    best_line << trial.number << " " << *best << "\n";
  }
  std::ostringstream script;
  script << "set output '" << path << "'\nset title 'study " << config.name << ": "
         << to_string(config.direction) << " " << config.objective << "' noenhanced\n"
         << "set xlabel 'trial'\nset ylabel 'objective value'\n"
         << (wants_log_scale(values) ? "set logscale y\n" : "unset logscale y\n")
         << "$values << EOD\n"
         << data.str() << "EOD\n$best << EOD\n"
         << best_line.str()
         << "EOD\nplot $values using 1:2 with points pt 7 ps 0.8 title 'complete trial', "
         << "$best using 1:2 with steps lw 2 title 'best so far'\n";
  return script.str();
}

std::string intermediate_script(const StudyConfig& config, const std::vector<Trial>& trials,
                                const std::string& path) {
  std::ostringstream pruned, finished;
  int last_step = 0;
  for (const Trial& trial : trials) {
    if (trial.intermediate.empty()) continue;
    last_step = std::max(last_step, trial.intermediate.rbegin()->first);
    std::ostringstream& block = trial.state == TrialState::kPruned ? pruned : finished;
    for (const auto& [step, value] : trial.intermediate) block << step << " " << value << "\n";
    block << "\n\n";
  }
  std::ostringstream script;
  script << "unset logscale y\nset output '" << path << "'\nset title 'study " << config.name
         << ": values reported per step (pruner " << config.pruner << ")' noenhanced\n"
         << "set xlabel 'step'\nset ylabel 'intermediate value'\n"
         << (last_step <= 30 ? "set xtics 1\n" : "set xtics autofreq\n") << "$pruned << EOD\n"
         << pruned.str() << "EOD\n$finished << EOD\n"
         << finished.str() << "EOD\nplot ";
  std::vector<std::string> clauses;
  if (!pruned.str().empty()) {
    clauses.push_back(
        "$pruned using 1:2 with linespoints lc rgb '#d95f02' pt 6 ps 0.5 title "
        "'pruned'");
  }
  if (!finished.str().empty()) {
    clauses.push_back(
        "$finished using 1:2 with linespoints lc rgb '#1b9e77' pt 7 ps 0.5 title "
        "'complete or running'");
  }
  for (size_t i = 0; i < clauses.size(); ++i) script << (i ? ", " : "") << clauses[i];
  script << "\n";
  return script.str();
}

std::string slice_script(const StudyConfig& config, const std::vector<Trial>& trials,
                         const std::string& path) {
  const std::vector<ParamSpec>& params = config.space.params;
  const size_t columns = std::min<size_t>(params.size(), 3);
  const size_t rows = (params.size() + columns - 1) / columns;
  std::vector<double> values;
  std::ostringstream data;
  for (const Trial& trial : trials) {
    if (!complete(trial)) continue;
    values.push_back(*trial.value);
    data << trial.number << " " << *trial.value;
    for (double param : trial.params) data << " " << param;
    data << "\n";
  }
  std::ostringstream script;
  script << "set output '" << path << "'\nset terminal pngcairo size " << 420 * columns << ","
         << 360 * rows << "\nset multiplot layout " << rows << "," << columns << " title 'study "
         << config.name << ": value against each parameter' noenhanced\n"
         << (wants_log_scale(values) ? "set logscale y\n" : "unset logscale y\n")
         << "set ylabel 'objective value'\nset cblabel 'trial'\nset palette rgb 33,13,10\n"
         << "unset key\n$slice << EOD\n"
         << data.str() << "EOD\n";
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& param = params[i];
    script << "set xlabel '" << param.name << "' noenhanced\n"
           << (param.log ? "set logscale x\n" : "unset logscale x\n");
    if (param.kind == ParamKind::kCategorical) {
      script << "set xtics (";
      for (size_t c = 0; c < param.choices.size(); ++c) {
        script << (c ? ", " : "") << "'" << param.choices[c] << "' " << c;
      }
      script << ")\nset xrange [-0.5:" << param.choices.size() - 0.5 << "]\n";
    } else {
      script << "set xtics autofreq\nset xrange [" << param.low << ":" << param.high << "]\n";
    }
    script << "plot $slice using " << i + 3 << ":2:1 with points pt 7 ps 0.8 palette\n";
  }
  script << "unset multiplot\n";
  return script.str();
}

// The numerical parameters, the ones a contour can lay out on axes.
std::vector<size_t> numerical_params(const StudyConfig& config) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < config.space.params.size(); ++i) {
    if (config.space.params[i].kind != ParamKind::kCategorical) indices.push_back(i);
  }
  return indices;
}

// Optuna's contour plot: for each pair of numerical parameters, the value interpolated over a
// 30 x 30 grid (gnuplot's dgrid3d, inverse-distance weighted) as a colour map, the trials as
// points; log-scaled parameters on log10 axes.
std::string contour_script(const StudyConfig& config, const std::vector<Trial>& trials,
                           const std::string& path) {
  const std::vector<ParamSpec>& params = config.space.params;
  const std::vector<size_t> axes = numerical_params(config);
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t a = 0; a < axes.size(); ++a) {
    for (size_t b = a + 1; b < axes.size(); ++b) pairs.emplace_back(axes[a], axes[b]);
  }
  const size_t columns = std::min<size_t>(pairs.size(), 3);
  const size_t rows = (pairs.size() + columns - 1) / columns;
  std::ostringstream data;
  for (const Trial& trial : trials) {
    if (!complete(trial)) continue;
    data << *trial.value;
    for (size_t i = 0; i < params.size(); ++i) {
      data << " " << (params[i].log ? std::log10(trial.params[i]) : trial.params[i]);
    }
    data << "\n";
  }
  const auto axis = [&](size_t i) {
    return params[i].log ? "log10(" + params[i].name + ")" : params[i].name;
  };
  std::ostringstream script;
  script << "set output '" << path << "'\nset terminal pngcairo size " << 460 * columns << ","
         << 400 * rows << "\nset multiplot layout " << rows << "," << columns << " title 'study "
         << config.name << ": value over each pair of parameters' noenhanced\n"
         << "set view map\nset dgrid3d 30,30 qnorm 2\nset palette rgb 33,13,10\n"
         << "set cblabel 'objective value'\nunset key\n$contour << EOD\n"
         << data.str() << "EOD\n";
  for (const auto& [x, y] : pairs) {
    script << "set xlabel '" << axis(x) << "' noenhanced\nset ylabel '" << axis(y)
           << "' noenhanced\nsplot $contour using " << x + 2 << ":" << y + 2
           << ":1 with pm3d, $contour using " << x + 2 << ":" << y + 2
           << ":1 nogrid with points pt 7 ps 0.6 lc rgb 'black'\n";
  }
  script << "unset multiplot\n";
  return script.str();
}

}  // namespace

std::vector<std::string> write_study_plots(const StudyConfig& config,
                                           const std::vector<Trial>& trials,
                                           const std::string& folder) {
  COURSE_CHECK(std::any_of(trials.begin(), trials.end(), complete), "study ", config.name,
               " has no complete trial to plot yet");
  write_study_csv(config, trials, folder);
  std::vector<std::string> paths = {folder + "/history.png", folder + "/slice.png"};
  run_gnuplot(history_script(config, trials, paths[0]));
  run_gnuplot(slice_script(config, trials, paths[1]));
  const bool reported = std::any_of(trials.begin(), trials.end(),
                                    [](const Trial& trial) { return !trial.intermediate.empty(); });
  if (reported) {
    paths.push_back(folder + "/intermediate.png");
    run_gnuplot(intermediate_script(config, trials, paths.back()));
  }
  const auto complete_trials = std::count_if(trials.begin(), trials.end(), complete);
  if (numerical_params(config).size() >= 2 && complete_trials >= 3) {
    paths.push_back(folder + "/contour.png");
    run_gnuplot(contour_script(config, trials, paths.back()));
  }
  return paths;
}

}  // namespace course::hpo
