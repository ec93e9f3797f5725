// A class graded as a Slurm job array: one task per trainee (this grader with --array-task N, its
// row written to results/), then a job that follows the array (--dependency=afterany) and
// gathers the rows into the scorecard (--gather).
#pragma once

#include <string>
#include <vector>

namespace course::grade {

struct GradingArray {
  std::string day, out, root;  // out and root absolute: the tasks start elsewhere
  double exercise_limit = 0, trainee_limit = 0;
  std::vector<std::string> trainees;  // as given (relative paths made absolute here)
  std::string partition, account, extra_options;
  int time_minutes = 0;  // each task's limit (0: the partition's)
  bool sandbox = true;   // false: --no-sandbox, passed to every task
};

// Submits the array and the gathering job and says their ids. Two hand-ins of one name are
// refused before anything is submitted (each task sees only its own trainee).
void submit_grading_array(const GradingArray& array);

}  // namespace course::grade
