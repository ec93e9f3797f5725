// The day-3 optimizer comparison: the same network trained with the course's six recipes
// (a constant rate, one-cycle, AdamW, LAMB, LARS, and Lion with a cosine down to lr/5) at a
// small and a large batch, the test accuracy after every epoch against epochs and time.
// A recipe's rate is given for the small batch; at a larger one it grows by the recipe's
// scaling rule, linear (SGD, LARS: Goyal et al.) or square root (the adaptive ones: You et
// al.'s LAMB), and the large batch warms up first (day 2's large-batch schedule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace day3 {

struct Recipe {
  std::string name, optimizer, schedule;
  float lr = 0;  // at the small batch
  float wd = 0;
  float cosine_floor = 0;
  bool linear_scaling = true;  // else square root
};

// The course's recipes, in its order.
const std::vector<Recipe>& course_recipes();

// The recipes named in a comma-separated list ("all": every one); throws for an unknown name.
std::vector<Recipe> select_recipes(const std::string& names);

// The recipe's rate at `batch` when it was tuned at `small_batch`.
float scaled_lr(const Recipe& recipe, int64_t batch, int64_t small_batch);

// The lab flags of a recipe at `batch` (the optimizer, schedule, rate, decay and warm-up).
std::vector<std::string> recipe_flags(const Recipe& recipe, int64_t batch, int64_t small_batch,
                                      double warmup_epochs);

struct EpochPoint {
  int64_t epoch = 0;
  double seconds = 0;  // since the run started, validation included
  double test_accuracy = 0;
};

struct RecipeRun {
  Recipe recipe;
  int64_t batch = 0;
  float lr = 0;
  std::vector<EpochPoint> epochs;
  std::string failure;  // why the run stopped early (a diverged loss), else empty
};

// Writes optimizers.csv (every epoch of every run), optimizers.md (a row per run) and one PNG
// per batch size (accuracy against epochs and against time) into `folder`; returns the
// Markdown table.
std::string write_comparison(const std::vector<RecipeRun>& runs, const std::string& folder);

}  // namespace day3
