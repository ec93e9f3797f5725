// A day's check, read per exercise: its GoogleTest suites are named after the exercises
// (TP2_4 tests TP2.4; TP4_19ByHand TP4.19; TP4_6_8 the three of TP4.6-TP4.8), so the
// grader runs each exercise's suites alone and reads their output into one result.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace course::grade {

// The exercises a suite tests ("TP4_6_8" -> TP4.6, TP4.7, TP4.8; a parameterised
// "Rates/TP3_6SweepRates" -> TP3.6); none for a suite not named after an exercise.
std::vector<std::string> exercises_of_suite(const std::string& suite);

// Each exercise's --gtest_filter, from a binary's --gtest_list_tests output.
std::map<std::string, std::string> exercise_filters(const std::string& listed_tests);

enum class Verdict {
  kPassed,
  kFailed,
  kCrashed,  // ended by a signal (a segmentation fault, an abort outside the check's own)
  kTimedOut,
  kDidNotCompile,
  kNotAttempted,
  kRefused
};
std::string verdict_name(Verdict v);  // "passed", "failed", "timed out", ...

struct ExerciseResult {
  Verdict verdict = Verdict::kPassed;
  std::string message;  // why it did not pass: the check's first message, the compiler's error
  std::string log;      // the log's path, relative to the scorecard's folder ("" when none)
  double seconds = 0;   // the check's runs, wall-clock (0 when none ran)
};

// gtest's XML report of one process (--gtest_output=xml:FILE).
struct GtestReport {
  int completed = 0;          // tests that ran to their end
  int failed = 0;             // tests with a failure, and errors
  std::string first_failure;  // the first failure's message, on one line
};
GtestReport read_gtest_report(const std::string& xml);

// One run of an exercise's suites by `processes` processes (its ranks): passed when the run
// exited 0 and every process wrote its report, together showing tests completed and none
// failed. The reports are files the grader named, read instead of the console, where the
// trainee's code prints too (a stray "[       OK ]" passes nothing). Otherwise crashed (ended by
// a signal, which is named) or failed, with the first failure's message: its assertion's lines
// from the console, or the rank's abort, or the report's message, or the output's last line.
ExerciseResult read_check_run(const std::string& output, int exit_status,
                              const std::vector<GtestReport>& reports, size_t processes);

}  // namespace course::grade
