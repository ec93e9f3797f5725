// `bazel run //day3_data:optimizers -- [flags]`: the day-3 optimizer comparison (see
// optimizer_comparison.h and day3_data/README.md). Every recipe at the small batch, then at the
// large one, each a run of the day-3 lab with --lab's fixed flags; then the table and plots.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "common/core/error.h"
#include "common/train/lab_main.h"
#include "common/train/training_loop.h"
#include "day3_data/optimizer_comparison.h"
#include "day3_data/trainer.h"

namespace {

struct ComparisonFlags {
  std::string recipes = "all";
  int64_t small_batch = 128, large_batch = 1024;
  double warmup_epochs = 1;
  std::string lab = "--epochs 3 --train-subset 20000 --no-progress";
  std::string out = "optimizers";
};

// The lab's words for one run: the program, the fixed flags, then the recipe's.
std::vector<std::string> run_words(const ComparisonFlags& f, const day3::Recipe& recipe,
                                   int64_t batch) {
  std::vector<std::string> words = {"lab"};
  for (const std::string& word : day3::split_words(f.lab)) words.push_back(word);
  for (const std::string& word :
       day3::recipe_flags(recipe, batch, f.small_batch, f.warmup_epochs)) {
    words.push_back(word);
  }
  return words;
}

day3::RecipeRun run_recipe(const ComparisonFlags& f, const day3::Recipe& recipe, int64_t batch) {
  const std::vector<std::string> words = run_words(f, recipe, batch);
  std::string command;
  for (const std::string& word : words) command += (command.empty() ? "" : " ") + word;
  std::printf("== %s at batch %lld: %s\n", recipe.name.c_str(), static_cast<long long>(batch),
              command.c_str());
  std::fflush(stdout);
  day3::RecipeRun run{
      .recipe = recipe, .batch = batch, .lr = day3::scaled_lr(recipe, batch, f.small_batch)};
  const auto start = std::chrono::steady_clock::now();
  try {
    day3::run_lab(
        day3::parse_lab_words(words), {.after_epoch = [&](int64_t epoch, double accuracy) {
          const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
          run.epochs.push_back({epoch, elapsed.count(), accuracy});
          return true;
        }});
  } catch (const course::train::TrainingDiverged&) {
    run.failure = "diverged";
  }
  return run;
}

void compare(ComparisonFlags f) {
  COURSE_CHECK(f.small_batch > 0 && f.large_batch > f.small_batch,
               "--large-batch must be larger than --small-batch, and both positive (got ",
               f.small_batch, " and ", f.large_batch, ")");
  COURSE_CHECK(f.warmup_epochs >= 0, "--warmup-epochs must not be negative");
  f.out = course::train::invocation_path(f.out);
  const std::vector<day3::Recipe> recipes = day3::select_recipes(f.recipes);
  for (const std::string& word : day3::split_words(f.lab)) {
    const std::string flag = word.substr(0, word.find('='));
    for (const char* own : {"--optimizer", "--schedule", "--batch-size", "--lr", "--wd",
                            "--cosine-floor", "--warmup-epochs"}) {
      COURSE_CHECK(flag != own, "--lab: ", own,
                   " is set by each recipe (see --recipes, "
                   "--small-batch, --large-batch and --warmup-epochs)");
    }
  }
  // Every run's flags are checked before the first run starts.
  for (const int64_t batch : {f.small_batch, f.large_batch}) {
    for (const day3::Recipe& recipe : recipes) {
      const day3::LabOptions options = day3::parse_lab_words(run_words(f, recipe, batch));
      COURSE_CHECK(!options.test && !options.findlr,
                   "--lab: the comparison trains whole epochs (no --test or --findlr)");
    }
  }
  std::filesystem::create_directories(f.out);
  course::train::check_output_path("--out", f.out + "/optimizers.csv");
  std::vector<day3::RecipeRun> runs;
  for (const int64_t batch : {f.small_batch, f.large_batch}) {
    for (const day3::Recipe& recipe : recipes) runs.push_back(run_recipe(f, recipe, batch));
  }
  std::printf("%s", day3::write_comparison(runs, f.out).c_str());
  std::printf("wrote %s/optimizers.csv, optimizers.md, batch_%lld.png and batch_%lld.png\n",
              f.out.c_str(), static_cast<long long>(f.small_batch),
              static_cast<long long>(f.large_batch));
}

}  // namespace

int main(int argc, char** argv) {
  ComparisonFlags f;
  CLI::App app(
      "Day 3: the course's optimizer recipes at a small and a large batch, compared by test "
      "accuracy against epochs and time");
  app.add_option("--recipes", f.recipes,
                 "comma-separated: constant, one-cycle, adamw, lamb, lars, lion (or all)")
      ->capture_default_str();
  app.add_option("--small-batch", f.small_batch, "the batch the recipes' rates are tuned for")
      ->capture_default_str();
  app.add_option("--large-batch", f.large_batch, "the large batch, its rates scaled")
      ->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs, "the large batch's linear warm-up")
      ->capture_default_str();
  app.add_option("--lab", f.lab, "the lab's flags shared by every run (epochs, data, ...)")
      ->capture_default_str();
  app.add_option("--out", f.out,
                 "folder for the table, CSV and plots (relative to where bazel run started)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return course::train::lab_main([&] { compare(f); });
}
