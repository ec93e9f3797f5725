// The check's runs of each trainee (see check_runs.h).
#include "tools/grade/check_runs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/core/error.h"
#include "tools/grade/check_results.h"
#include "tools/grade/sandbox.h"
#include "tools/grade/system.h"

namespace course::grade {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// `command` as a trainee's binary runs: in its sandbox (sandbox.h) unless there is none, with
// TEST_TMPDIR (where bazel test would have a check write) its scratch folder,
// test_tmp/<package>/<exercise id>. The CPU-time limit is a backstop behind the wall-clock ones.
std::string as_run(const std::string& command, const Trainee& t, const Course& c, bool sandbox,
                   const std::string& id) {
  const fs::path scratch = c.work / "test_tmp" / t.package / id;
  fs::create_directories(scratch);
  const std::string run = "export TEST_TMPDIR=" + shell_quoted(scratch.string()) + "; " + command;
  if (!sandbox) return run;
  return sandboxed(run, {.work = c.work, .package = t.package, .scratch = scratch}, {});
}

std::string mpirun() {
  return std::string("mpirun --oversubscribe --bind-to none ") +
         (geteuid() == 0 ? "--allow-run-as-root " : "") + "-x OMP_NUM_THREADS=1 -x TEST_TMPDIR ";
}

// The exercise's check commands: each check binary's suites of `id`, once per rank count.
std::vector<std::string> check_commands(const Trainee& t, const Course& c,
                                        const ExerciseFilters& filters, const std::string& id) {
  std::vector<std::string> commands;
  for (const CheckBinary& b : c.day.checks) {
    const auto f = filters.at(b.target).find(id);
    if (f == filters.at(b.target).end()) continue;
    const std::string binary =
        shell_quoted((c.work / "bazel-bin" / t.package / b.target).string()) +
        " --gtest_color=no --gtest_filter=" + shell_quoted(f->second);
    if (b.ranks.empty()) commands.push_back(binary);
    for (const int ranks : b.ranks) {
      commands.push_back(mpirun() + "-np " + std::to_string(ranks) + " " + binary);
    }
  }
  return commands;
}

// Runs the commands until one does not pass or time runs out; their output goes to `log`.
ExerciseResult run_exercise(const std::string& id, const Trainee& t, const Course& c,
                            const std::vector<std::string>& commands, const CheckLimits& limits,
                            Clock::time_point trainee_deadline, std::string& log) {
  if (commands.empty()) return {Verdict::kFailed, "the check has no test of " + id, ""};
  const Clock::time_point exercise_deadline = after(limits.exercise_seconds);
  const Clock::time_point deadline = std::min(exercise_deadline, trainee_deadline);
  const bool trainees_limit = trainee_deadline < exercise_deadline;
  const auto whole_seconds = [](double seconds) {
    return std::to_string(static_cast<int>(seconds)) + " s";
  };
  ExerciseResult result{Verdict::kPassed, "", ""};
  for (const std::string& command : commands) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      return {Verdict::kTimedOut,
              "no time left of the trainee's " + whole_seconds(limits.trainee_seconds), ""};
    }
    const TimedRun r = run_with_limit(as_run(command, t, c, limits.sandbox, id), left);
    log += "$ " + command + "\n" + r.output + "\n";
    if (r.timed_out) {
      return {Verdict::kTimedOut,
              "stopped after " +
                  whole_seconds(trainees_limit ? limits.trainee_seconds : limits.exercise_seconds) +
                  " (" + (trainees_limit ? "the trainee's" : "the exercise's") + " limit)",
              ""};
    }
    result = read_check_run(r.output, r.status);
    if (result.verdict != Verdict::kPassed) return result;
  }
  return result;
}

}  // namespace

Trainee course_stubs(const Course& course) {
  Trainee stubs;
  stubs.submission.name = "the course's stubs";
  stubs.package = "graded/course/" + course.day.day;
  prepare(stubs, course);
  write_package(stubs, course);
  return stubs;
}

ExerciseFilters exercise_filters_of(const Trainee& stubs, const Course& c) {
  ExerciseFilters filters;
  for (const CheckBinary& b : c.day.checks) {
    const fs::path binary = c.work / "bazel-bin" / stubs.package / b.target;
    const TimedRun r = run_with_limit(shell_quoted(binary.string()) + " --gtest_list_tests", 120);
    COURSE_CHECK(r.status == 0, "the course's own stubs give no list of the check's tests (",
                 binary.string(), "): ", r.output);
    filters[b.target] = exercise_filters(r.output);
  }
  return filters;
}

void run_checks(const Trainee& t, const Course& c, const ExerciseFilters& filters,
                const CheckLimits& limits, const fs::path& out, TraineeScore& score) {
  const Clock::time_point trainee_deadline = after(limits.trainee_seconds);
  for (const std::string& id : c.exercises) {
    if (const auto d = t.decided.find(id); d != t.decided.end()) {
      score.results[id] = d->second;
      continue;
    }
    std::string log;
    ExerciseResult result =
        run_exercise(id, t, c, check_commands(t, c, filters, id), limits, trainee_deadline, log);
    result.log = "logs/" + t.submission.name + "/" + id + ".log";
    write_text(out / result.log, log);
    score.results[id] = result;
  }
}

}  // namespace course::grade
