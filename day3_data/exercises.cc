// Day 3 exercises TP3.1-TP3.10 (the lab sheet is day3_data/README.md).
// solutions/day3_data/exercises.cc is the complete version; day3_data/exercises.cc is generated
// from it by tools/labgen with every exercise replaced by a stub: trainees edit that one.
#include "day3_data/exercises.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/core/exercise.h"
#include "common/kernels/elementwise.h"

namespace day3 {

course::CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng) {
  // BEGIN EXERCISE TP3.1: sqrt(1 - lambda) box at a random pixel, clipped; lambda from its area
  ::course::exercise_todo("TP3.1",
                          "sqrt(1 - lambda) box at a random pixel, clipped; lambda from its area",
                          "day3_data/README.md#tp31");
  // END EXERCISE
}

std::vector<float> mixed_targets(const std::vector<int64_t>& labels,
                                 const std::vector<float>& lambdas, int64_t classes,
                                 float smoothing) {
  // BEGIN EXERCISE TP3.2: lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), row by row
  ::course::exercise_todo("TP3.2",
                          "lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), row by row",
                          "day3_data/README.md#tp32");
  // END EXERCISE
}

Tensor soft_target_gradient(const course::CrossEntropyOutput& forward, const Tensor& targets,
                            float grad_loss) {
  // BEGIN EXERCISE TP3.3: (softmax - targets) times grad_loss / N
  ::course::exercise_todo("TP3.3", "(softmax - targets) times grad_loss / N",
                          "day3_data/README.md#tp33");
  // END EXERCISE
}

std::vector<course::TarSample> group_members(const std::vector<course::TarMember>& members) {
  // BEGIN EXERCISE TP3.4: one sample per run of consecutive members with the same key
  ::course::exercise_todo("TP3.4", "one sample per run of consecutive members with the same key",
                          "day3_data/README.md#tp34");
  // END EXERCISE
}

std::vector<int64_t> quasi_random_pages(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, std::mt19937& rng) {
  // BEGIN EXERCISE TP3.5: shuffle the pages, then the samples of every pages_in_memory pages
  ::course::exercise_todo("TP3.5",
                          "shuffle the pages, then the samples of every pages_in_memory pages",
                          "day3_data/README.md#tp35");
  // END EXERCISE
}

course::hpo::TrialSplit split_trials(const std::vector<course::hpo::Trial>& trials,
                                     course::hpo::Direction direction, int n_below,
                                     bool include_running) {
  using course::hpo::Trial;
  using course::hpo::TrialState;
  // BEGIN EXERCISE TP3.8: rank complete, then pruned trials; the first n_below are below
  ::course::exercise_todo("TP3.8", "rank complete, then pruned trials; the first n_below are below",
                          "day3_data/README.md#tp38");
  // END EXERCISE
}

bool promotable_to_next_rung(double value, std::vector<double> competing, int reduction_factor,
                             course::hpo::Direction direction) {
  // BEGIN EXERCISE TP3.9: at least as good as the floor(n / eta)-th best (the best when 0)
  ::course::exercise_todo("TP3.9",
                          "at least as good as the floor(n / eta)-th best (the best when 0)",
                          "day3_data/README.md#tp39");
  // END EXERCISE
}

bool median_prunes(const course::hpo::Trial& trial, int step,
                   const std::vector<const course::hpo::Trial*>& complete,
                   course::hpo::Direction direction) {
  // BEGIN EXERCISE TP3.10: the trial's best so far against the complete trials' median at step
  ::course::exercise_todo("TP3.10",
                          "the trial's best so far against the complete trials' median at step",
                          "day3_data/README.md#tp310");
  // END EXERCISE
}

course::hpo::SearchRules search_rules() {
  return {.split = split_trials, .promotable = promotable_to_next_rung, .median = median_prunes};
}

std::vector<float> sweep_rates(float first, float last, int64_t count) {
  // BEGIN EXERCISE TP3.6: geometric steps from first to last, both ends included
  ::course::exercise_todo("TP3.6", "geometric steps from first to last, both ends included",
                          "day3_data/README.md#tp36");
  // END EXERCISE
}

std::optional<float> suggest_rate(const std::vector<float>& rates,
                                  const std::vector<double>& mean_losses) {
  // BEGIN EXERCISE TP3.7: a tenth of the rate of the lowest finite loss
  ::course::exercise_todo("TP3.7", "a tenth of the rate of the lowest finite loss",
                          "day3_data/README.md#tp37");
  // END EXERCISE
}

}  // namespace day3
