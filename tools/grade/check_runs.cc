// The check's runs of each trainee (see check_runs.h).
#include "tools/grade/check_runs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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
// test_tmp/<package>/<exercise id>, and `reports` writable. The CPU-time limit is a backstop
// behind the wall-clock ones.
std::string as_run(const std::string& command, const Trainee& t, const Course& c, bool sandbox,
                   const std::string& id, const fs::path& reports) {
  const fs::path scratch = c.work / "test_tmp" / t.package / id;
  fs::create_directories(scratch);
  const std::string run = "export TEST_TMPDIR=" + shell_quoted(scratch.string()) + "; " + command;
  if (!sandbox) return run;
  return sandboxed(
      run, {.work = c.work, .package = t.package, .scratch = scratch, .reports = reports}, {});
}

std::string mpirun() {
  return std::string("mpirun --oversubscribe --bind-to none ") +
         (geteuid() == 0 ? "--allow-run-as-root " : "") + "-x OMP_NUM_THREADS=1 -x TEST_TMPDIR ";
}

// One run of a check binary's suites of an exercise: alone (ranks 0) or under mpirun.
struct CheckCommand {
  std::string binary;  // the binary with its flags, shell-quoted
  int ranks = 0;

  size_t processes() const { return ranks == 0 ? 1 : ranks; }
  // The command line, each process writing its gtest report to `reports`/rank-<rank>.xml.
  std::string line(const fs::path& reports) const {
    const std::string report = "--gtest_output=xml:" + (reports / "rank-").string();
    if (ranks == 0) return binary + " " + shell_quoted(report + "0.xml");
    return mpirun() + "-np " + std::to_string(ranks) + " sh -c " +
           shell_quoted("exec \"$0\" \"$@\" " + shell_quoted(report) +
                        "\"$OMPI_COMM_WORLD_RANK.xml\"") +
           " " + binary;
  }
};

// The exercise's check commands: each check binary's suites of `id`, once per rank count.
std::vector<CheckCommand> check_commands(const Trainee& t, const Course& c,
                                         const ExerciseFilters& filters, const std::string& id) {
  std::vector<CheckCommand> commands;
  for (const CheckBinary& b : c.day.checks) {
    const auto f = filters.at(b.target).find(id);
    if (f == filters.at(b.target).end()) continue;
    const std::string binary =
        shell_quoted((c.work / "bazel-bin" / t.package / b.target).string()) +
        " --gtest_color=no --gtest_filter=" + shell_quoted(f->second);
    if (b.ranks.empty()) commands.push_back({binary, 0});
    for (const int ranks : b.ranks) commands.push_back({binary, ranks});
  }
  return commands;
}

// The reports a run's processes wrote (a missing, oversized or not plain one left out: the
// trainee's code could leave a link there).
std::vector<GtestReport> reports_in(const fs::path& folder, size_t processes) {
  std::vector<GtestReport> reports;
  for (size_t rank = 0; rank < processes; ++rank) {
    const fs::path file = folder / ("rank-" + std::to_string(rank) + ".xml");
    std::error_code error;
    if (fs::symlink_status(file, error).type() != fs::file_type::regular) continue;
    const auto bytes = fs::file_size(file, error);
    if (!error && bytes < (16u << 20)) reports.push_back(read_gtest_report(read_text(file)));
  }
  return reports;
}

// A run whose output passed the bound (system.h) says so in its cell: its verdict stands (it is
// read from the reports), and its log holds the output's start and end.
ExerciseResult with_cut_output_said(ExerciseResult result, const TimedRun& run) {
  if (run.bytes_cut == 0) return result;
  const auto mib = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
    return std::string(text);
  };
  result.message += (result.message.empty() ? "" : "; ") + std::string("its output cut: ") +
                    mib(static_cast<double>(run.bytes_cut)) + " left out of the log, its first " +
                    "and last " + mib(kKeptOutputBytes / 2.0) + " kept";
  return result;
}

// Runs the commands until one does not pass or time runs out; their output goes to `log`.
ExerciseResult run_exercise(const std::string& id, const Trainee& t, const Course& c,
                            const std::vector<CheckCommand>& commands, const CheckLimits& limits,
                            Clock::time_point trainee_deadline, std::string& log) {
  if (commands.empty()) return {Verdict::kFailed, "the check has no test of " + id, ""};
  const Clock::time_point exercise_deadline = after(limits.exercise_seconds);
  const Clock::time_point deadline = std::min(exercise_deadline, trainee_deadline);
  const bool trainees_limit = trainee_deadline < exercise_deadline;
  const auto whole_seconds = [](double seconds) {
    return std::to_string(static_cast<int>(seconds)) + " s";
  };
  // The reports beside the scratch folder, where the check's TEST_TMPDIR does not point.
  const fs::path reports = c.work / "test_reports" / t.package / id;
  ExerciseResult result{Verdict::kPassed, "", ""};
  for (const CheckCommand& command : commands) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      return {Verdict::kTimedOut,
              "no time left of the trainee's " + whole_seconds(limits.trainee_seconds), ""};
    }
    fs::remove_all(reports);
    fs::create_directories(reports);
    const std::string line = command.line(reports);
    const TimedRun r = run_with_limit(as_run(line, t, c, limits.sandbox, id, reports), left);
    log += "$ " + line + "\n" + r.output + "\n";
    if (r.timed_out) {
      return with_cut_output_said(
          {Verdict::kTimedOut,
           "stopped after " +
               whole_seconds(trainees_limit ? limits.trainee_seconds : limits.exercise_seconds) +
               " (" + (trainees_limit ? "the trainee's" : "the exercise's") + " limit)",
           ""},
          r);
    }
    result = with_cut_output_said(
        read_check_run(r.output, r.status, reports_in(reports, command.processes()),
                       command.processes()),
        r);
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
    const Clock::time_point started = Clock::now();
    ExerciseResult result =
        run_exercise(id, t, c, check_commands(t, c, filters, id), limits, trainee_deadline, log);
    result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    result.log = "logs/" + t.submission.name + "/" + id + ".log";
    write_text(out / result.log, log);
    score.results[id] = result;
  }
}

}  // namespace course::grade
