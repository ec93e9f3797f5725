// The grader's job array (slurm_array.h).
#include "tools/grade/slurm_array.h"

#include <filesystem>
#include <iostream>
#include <map>

#include "common/core/error.h"
#include "tools/grade/submission.h"
#include "tools/grade/system.h"

namespace course::grade {

namespace {

namespace fs = std::filesystem;

void refuse_names_twice(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> by_name;
  for (const std::string& spec : specs) {
    const std::string name = trainee_name(spec);
    const auto [first, fresh] = by_name.emplace(name, spec);
    COURSE_CHECK(fresh, "two hand-ins are named ", name, " (", first->second, " and ", spec,
                 "): name them apart (NAME=SPEC)");
  }
}

std::string sbatch_options(const GradingArray& a) {
  std::string options = a.extra_options;
  if (!a.partition.empty()) options += " --partition=" + shell_quoted(a.partition);
  if (!a.account.empty()) options += " --account=" + shell_quoted(a.account);
  if (a.time_minutes > 0) options += " --time=" + std::to_string(a.time_minutes);
  return options;
}

// Submits `command` with sbatch --parsable; returns the job id.
std::string submitted_job(const std::string& command, const std::string& what) {
  const TimedRun submitted = run_with_limit(command, 120);
  COURSE_CHECK(submitted.status == 0, "sbatch refused ", what, ": ", submitted.output);
  return submitted.output.substr(0, submitted.output.find_first_of(";\n"));
}

}  // namespace

void submit_grading_array(const GradingArray& a) {
  refuse_names_twice(a.trainees);
  const std::string options = sbatch_options(a);
  const std::string self = fs::canonical("/proc/self/exe").string();
  const std::string args = "--day " + shell_quoted(a.day) + " --out " + shell_quoted(a.out) +
                           " --root " + shell_quoted(a.root) + " --exercise-limit " +
                           std::to_string(a.exercise_limit) + " --trainee-limit " +
                           std::to_string(a.trainee_limit) + (a.sandbox ? "" : " --no-sandbox");
  std::string trainees;
  for (const std::string& t : a.trainees) {
    const bool named = t.find('=') != std::string::npos;
    trainees += " " + shell_quoted(named ? t : fs::absolute(t).string());
  }
  const std::string job = submitted_job(
      "sbatch --parsable --job-name=grade-" + a.day + " --array=0-" +
          std::to_string(a.trainees.size() - 1) +
          " --output=" + shell_quoted(a.out + "/slurm-%A_%a.out") + " " + options + " --wrap " +
          shell_quoted(shell_quoted(self) + " " + args + " --array-task \"$SLURM_ARRAY_TASK_ID\"" +
                       trainees),
      "the array");
  const std::string gather = submitted_job(
      "sbatch --parsable --job-name=grade-" + a.day + "-scorecard --dependency=afterany:" + job +
          " --output=" + shell_quoted(a.out + "/slurm-scorecard-%j.out") + " " + options +
          " --wrap " + shell_quoted(shell_quoted(self) + " " + args + " --gather"),
      "the scorecard's job");
  std::cout << "submitted job array " << job << " (" << a.trainees.size()
            << " trainees) and the scorecard's job " << gather << "; the scorecard: " << a.out
            << "/index.html\n";
}

}  // namespace course::grade
