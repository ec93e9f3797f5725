// The learning-rate finder (see lr_finder.h): the lab's runs with the rates of the sweep, each
// rate's mean loss, the table, the CSV and the plot.
#include "day3_data/lr_finder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/core/format.h"
#include "common/core/gnuplot.h"
#include "common/core/launch_rank.h"
#include "common/train/training_loop.h"
#include "day3_data/exercises.h"
#include "day3_data/trainer.h"

namespace day3 {

using course::format_number;
using course::train::TrainingDiverged;

namespace {

// A mean loss this many times the lowest so far counts as diverged.
constexpr double kDivergenceFactor = 4;

const char* to_string(RateOutcome outcome) {
  switch (outcome) {
    case RateOutcome::kMeasured:
      return "measured";
    case RateOutcome::kDiverged:
      return "diverged";
    case RateOutcome::kNotRun:
      break;
  }
  return "not run";
}

// The lab's options for a run of `steps` steps at rates the finder sets.
LabOptions sweep_run(const LabOptions& o, int64_t steps) {
  LabOptions run = o;
  run.findlr = false;
  run.test = true;
  run.test_nsteps = steps;
  run.epochs = steps;  // enough epochs for the steps whatever the epoch's length
  run.warmup_epochs = 0;
  run.progress = false;
  return run;
}

// Records rate i's mean loss and prints it; false (the rate marked diverged) when the mean is
// kDivergenceFactor times the lowest so far or not finite.
bool record(LrSweep& sweep, size_t i, double mean_loss) {
  double lowest = std::numeric_limits<double>::infinity();
  for (const SweepPoint& point : sweep.points) {
    if (point.outcome == RateOutcome::kMeasured) lowest = std::min(lowest, point.mean_loss);
  }
  SweepPoint& point = sweep.points[i];
  const bool diverged = !std::isfinite(mean_loss) || mean_loss > kDivergenceFactor * lowest;
  point.outcome = diverged ? RateOutcome::kDiverged : RateOutcome::kMeasured;
  if (!diverged) point.mean_loss = mean_loss;
  std::printf("findlr: lr %-8s mean loss %.4f%s\n", format_number(point.lr).c_str(), mean_loss,
              diverged ? " (diverged)" : "");
  std::fflush(stdout);
  return !diverged;
}

// The rate under way when a run diverged.
void mark_diverged_in_progress(LrSweep& sweep) {
  for (SweepPoint& point : sweep.points) {
    if (point.outcome == RateOutcome::kMeasured) continue;
    if (point.outcome == RateOutcome::kNotRun) {
      point.outcome = RateOutcome::kDiverged;
      std::printf("findlr: lr %-8s diverged\n", format_number(point.lr).c_str());
    }
    return;
  }
}

void run_correlated(const LabOptions& o, LrSweep& sweep) {
  const int64_t rates = static_cast<int64_t>(sweep.points.size()), steps = o.findlr_steps;
  double loss_sum = 0;
  try {
    run_lab(
        sweep_run(o, rates * steps),
        {.lr_at = [&](int64_t step) { return sweep.points[std::min(step / steps, rates - 1)].lr; },
         .after_step =
             [&](int64_t step, float loss) {
               loss_sum += loss;
               if (step % steps != 0) return;
               if (!record(sweep, step / steps - 1, loss_sum / steps)) {
                 throw TrainingDiverged("the sweep diverged");
               }
               loss_sum = 0;
             }});
  } catch (const TrainingDiverged&) {
    mark_diverged_in_progress(sweep);
  }
}

void run_decorrelated(const LabOptions& o, LrSweep& sweep) {
  for (size_t i = 0; i < sweep.points.size(); ++i) {
    const float lr = sweep.points[i].lr;
    double loss_sum = 0;
    try {
      run_lab(sweep_run(o, o.findlr_steps),
              {.lr_at = [lr](int64_t) { return lr; },
               .after_step = [&](int64_t, float loss) { loss_sum += loss; }});
    } catch (const TrainingDiverged&) {
      mark_diverged_in_progress(sweep);
      return;
    }
    if (!record(sweep, i, loss_sum / static_cast<double>(o.findlr_steps))) return;
  }
}

std::string title(const LabOptions& o) {
  return "learning-rate finder: " + std::string(findlr_mode_name(o.findlr_mode)) + ", " +
         std::to_string(o.findlr_steps) + " steps per rate, " +
         std::string(course::optim::optimizer_name(o.optimizer)) + ", batch " +
         std::to_string(o.batch_size);
}

void write_csv(const LrSweep& sweep, const std::string& path) {
  std::ofstream csv(path);
  csv << "lr,mean_loss,outcome\n";
  for (const SweepPoint& point : sweep.points) {
    csv << format_number(point.lr) << ","
        << (point.outcome == RateOutcome::kMeasured ? format_number(point.mean_loss) : "") << ","
        << to_string(point.outcome) << "\n";
  }
  COURSE_CHECK(csv.good(), "cannot write ", path);
}

void plot(const LabOptions& o, const LrSweep& sweep, const std::string& path) {
  std::ostringstream script;
  script << "set output '" << path << "'\nset title '" << title(o) << "' noenhanced\n"
         << "set logscale x\nset format x '10^{%L}'\nset xlabel 'learning rate'\n"
         << "set ylabel 'mean training loss at the rate'\nset key bottom left\n";
  if (sweep.suggested) {
    script << "set arrow from " << *sweep.suggested << ", graph 0 to " << *sweep.suggested
           << ", graph 1 nohead dt 2 lw 2 lc rgb 'red'\nset label 'suggested "
           << format_number(*sweep.suggested) << "' at " << *sweep.suggested
           << ", graph 0.5 offset 1,0 tc rgb 'red'\n";
  }
  // Diverged rates are marked at the top of the measured range.
  double top = 0;
  std::ostringstream measured, diverged;
  for (const SweepPoint& point : sweep.points) {
    if (point.outcome != RateOutcome::kMeasured) continue;
    measured << point.lr << " " << point.mean_loss << "\n";
    top = std::max(top, point.mean_loss);
  }
  for (const SweepPoint& point : sweep.points) {
    if (point.outcome == RateOutcome::kDiverged) diverged << point.lr << " " << top << "\n";
  }
  script << "$measured << EOD\n"
         << measured.str() << "EOD\nplot $measured using 1:2 with linespoints pt 7 lw 2 "
         << "title 'measured rates'";
  if (!diverged.str().empty()) {
    script << ", '-' using 1:2 with points pt 2 ps 2 lc rgb 'black' title 'diverged'\n"
           << diverged.str() << "e";
  }
  script << "\n";
  course::run_gnuplot(script.str());
}

}  // namespace

LrSweep find_lr(const LabOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  const std::string plot_path = course::train::invocation_path(o.findlr_plot);
  course::train::check_output_path("--findlr-plot", plot_path);
  LrSweep sweep;
  for (float lr : sweep_rates(o.findlr_start, o.lr, o.findlr_rates)) {
    sweep.points.push_back({.lr = lr, .mean_loss = std::nan("")});
  }
  std::printf("%s, %lld rates from %s to %s\n", title(o).c_str(),
              static_cast<long long>(o.findlr_rates), format_number(o.findlr_start).c_str(),
              format_number(o.lr).c_str());
  if (o.findlr_mode == FindLrMode::kCorrelated) {
    run_correlated(o, sweep);
  } else {
    run_decorrelated(o, sweep);
  }
  std::vector<float> rates;
  std::vector<double> losses;
  for (const SweepPoint& point : sweep.points) {
    rates.push_back(point.lr);
    losses.push_back(point.mean_loss);
  }
  sweep.suggested = suggest_rate(rates, losses);
  COURSE_CHECK(sweep.suggested, "the sweep diverged at its first rate ",
               format_number(o.findlr_start), ": lower --findlr-start");
  const std::string csv_path = std::filesystem::path(plot_path).replace_extension(".csv");
  write_csv(sweep, csv_path);
  plot(o, sweep, plot_path);
  std::printf(
      "suggested learning rate: %s (a tenth of the lowest loss's rate)\n"
      "plot: %s\ntable: %s\n",
      format_number(*sweep.suggested).c_str(), plot_path.c_str(), csv_path.c_str());
  return sweep;
}

}  // namespace day3
