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

enum class Verdict { kPassed, kFailed, kTimedOut, kDidNotCompile, kNotAttempted, kRefused };
std::string verdict_name(Verdict v);  // "passed", "failed", "timed out", ...

struct ExerciseResult {
  Verdict verdict = Verdict::kPassed;
  std::string message;  // why it did not pass: the check's first message, the compiler's error
  std::string log;      // the log's path, relative to the scorecard's folder ("" when none)
};

// One run of an exercise's suites: passed when the run exited 0 and some test ran and passed;
// otherwise failed, with the first failure's message (its assertion's lines, or the rank's
// abort, or the output's last line when the run died without one).
ExerciseResult read_check_run(const std::string& output, int exit_status);

}  // namespace course::grade
