// The optimizer comparison's recipes, scaling and report (see optimizer_comparison.h).
#include "day3_data/optimizer_comparison.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/core/gnuplot.h"

namespace day3 {

using course::format_number;
using course::format_percent;

namespace {

double best_accuracy(const RecipeRun& run) {
  double best = 0;
  for (const EpochPoint& point : run.epochs) best = std::max(best, point.test_accuracy);
  return best;
}

std::string markdown_table(const std::vector<RecipeRun>& runs) {
  std::ostringstream table;
  table << "| recipe | optimizer | schedule | batch | lr | wd | epochs | best test acc. (%) | "
           "final (%) | time (s) |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: |\n";
  for (const RecipeRun& run : runs) {
    const Recipe& r = run.recipe;
    table << "| " << r.name << " | " << r.optimizer << " | " << r.schedule
          << (r.cosine_floor > 0 ? " to lr x " + format_number(r.cosine_floor) : "") << " | "
          << run.batch << " | " << format_number(run.lr) << " | " << format_number(r.wd) << " | "
          << run.epochs.size() << " | ";
    if (run.epochs.empty()) {
      table << run.failure << " | | |\n";
      continue;
    }
    char seconds[16];
    std::snprintf(seconds, sizeof seconds, "%.0f", run.epochs.back().seconds);
    table << format_percent(best_accuracy(run))
          << (run.failure.empty() ? "" : " (" + run.failure + ")") << " | "
          << format_percent(run.epochs.back().test_accuracy) << " | " << seconds << " |\n";
  }
  return table.str();
}

void write_csv(const std::vector<RecipeRun>& runs, const std::string& path) {
  std::ofstream csv(path);
  csv << "recipe,optimizer,schedule,batch,lr,wd,epoch,seconds,test_accuracy\n";
  for (const RecipeRun& run : runs) {
    for (const EpochPoint& point : run.epochs) {
      csv << run.recipe.name << "," << run.recipe.optimizer << "," << run.recipe.schedule << ","
          << run.batch << "," << format_number(run.lr) << "," << format_number(run.recipe.wd) << ","
          << point.epoch << "," << point.seconds << "," << point.test_accuracy << "\n";
    }
  }
  COURSE_CHECK(csv.good(), "cannot write ", path);
}

// Accuracy against epochs (left) and seconds (right), one line per recipe at this batch.
void plot_batch(const std::vector<const RecipeRun*>& runs, int64_t batch, const std::string& path) {
  std::ostringstream blocks, by_epoch, by_time;
  for (size_t i = 0; i < runs.size(); ++i) {
    blocks << "$run" << i << " << EOD\n";
    for (const EpochPoint& point : runs[i]->epochs) {
      blocks << point.epoch << " " << point.seconds << " " << 100 * point.test_accuracy << "\n";
    }
    blocks << "EOD\n";
    const std::string title = runs[i]->recipe.name + " (lr " + format_number(runs[i]->lr) + ")";
    by_epoch << (i ? ", " : "plot ") << "$run" << i << " using 1:3 with linespoints pt 7 title '"
             << title << "'";
    by_time << (i ? ", " : "plot ") << "$run" << i << " using 2:3 with linespoints pt 7 title '"
            << title << "'";
  }
  std::ostringstream script;
  script << "set output '" << path << "'\n"
         << blocks.str() << "set multiplot layout 1,2 title 'batch " << batch
         << ": test accuracy of each recipe' noenhanced\nset ylabel 'test accuracy (%)'\n"
         << "set key bottom right noenhanced\nset xlabel 'epoch'\nset xtics 1\n"
         << by_epoch.str() << "\nset xlabel 'seconds'\nset xtics autofreq\n"
         << by_time.str() << "\nunset multiplot\n";
  course::run_gnuplot(script.str(), 1200, 500);
}

}  // namespace

const std::vector<Recipe>& course_recipes() {
  static const std::vector<Recipe> recipes = {
      {.name = "constant", .optimizer = "sgd", .schedule = "constant", .lr = 0.05f, .wd = 5e-4f},
      {.name = "one-cycle", .optimizer = "sgd", .schedule = "one-cycle", .lr = 0.1f, .wd = 5e-4f},
      {.name = "adamw",
       .optimizer = "adamw",
       .schedule = "one-cycle",
       .lr = 3e-3f,
       .wd = 0.05f,
       .linear_scaling = false},
      {.name = "lamb",
       .optimizer = "lamb",
       .schedule = "one-cycle",
       .lr = 1e-2f,
       .wd = 0.01f,
       .linear_scaling = false},
      {.name = "lars", .optimizer = "lars", .schedule = "one-cycle", .lr = 0.5f, .wd = 5e-4f},
      {.name = "lion",
       .optimizer = "lion",
       .schedule = "cosine",
       .lr = 1e-3f,
       .wd = 0.5f,
       .cosine_floor = 0.2f,
       .linear_scaling = false},
  };
  return recipes;
}

std::vector<Recipe> select_recipes(const std::string& names) {
  if (names == "all") return course_recipes();
  std::vector<Recipe> selected;
  std::istringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    const auto& all = course_recipes();
    const auto found = std::find_if(all.begin(), all.end(),
                                    [&](const Recipe& recipe) { return recipe.name == name; });
    COURSE_CHECK(found != all.end(), "unknown recipe '", name,
                 "' (constant, one-cycle, adamw, lamb, lars, lion or all)");
    selected.push_back(*found);
  }
  COURSE_CHECK(!selected.empty(), "--recipes names no recipe");
  return selected;
}

float scaled_lr(const Recipe& recipe, int64_t batch, int64_t small_batch) {
  const double ratio = static_cast<double>(batch) / static_cast<double>(small_batch);
  return static_cast<float>(recipe.lr * (recipe.linear_scaling ? ratio : std::sqrt(ratio)));
}

std::vector<std::string> recipe_flags(const Recipe& recipe, int64_t batch, int64_t small_batch,
                                      double warmup_epochs) {
  std::vector<std::string> flags = {
      "--optimizer",  recipe.optimizer,
      "--schedule",   recipe.schedule,
      "--batch-size", std::to_string(batch),
      "--lr",         format_number(scaled_lr(recipe, batch, small_batch)),
      "--wd",         format_number(recipe.wd)};
  if (recipe.cosine_floor > 0) {
    flags.insert(flags.end(), {"--cosine-floor", format_number(recipe.cosine_floor)});
  }
  if (batch > small_batch && warmup_epochs > 0) {
    flags.insert(flags.end(), {"--warmup-epochs", format_number(warmup_epochs)});
  }
  return flags;
}

std::string write_comparison(const std::vector<RecipeRun>& runs, const std::string& folder) {
  write_csv(runs, folder + "/optimizers.csv");
  const std::string table = markdown_table(runs);
  std::ofstream(folder + "/optimizers.md") << table;
  std::map<int64_t, std::vector<const RecipeRun*>> by_batch;
  for (const RecipeRun& run : runs) by_batch[run.batch].push_back(&run);
  for (const auto& [batch, batch_runs] : by_batch) {
    plot_batch(batch_runs, batch, folder + "/batch_" + std::to_string(batch) + ".png");
  }
  return table;
}

}  // namespace day3
