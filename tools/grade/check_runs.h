// The day's check run on each trainee's build: the suites of each exercise, listed from the
// course's own stubs (never from a trainee's binary, whose static initialisers could crash, hang
// or print into the list and so set everyone's filters), run alone on every rank count of a
// multi-rank check under the exercise's and the trainee's time limits, in the trainee's sandbox.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "tools/grade/class_build.h"
#include "tools/grade/scorecard.h"

namespace course::grade {

// The check's gtest filter of each exercise, per check binary: binary -> exercise id -> filter.
using ExerciseFilters = std::map<std::string, std::map<std::string, std::string>>;

struct CheckLimits {
  double exercise_seconds = 120;  // one exercise's checks
  double trainee_seconds = 1200;  // all of a trainee's
  bool sandbox = true;            // each run in bubblewrap (sandbox.h)
};

// The course's own stubs, to be built with the class as one more package.
Trainee course_stubs(const Course& course);
ExerciseFilters exercise_filters_of(const Trainee& stubs, const Course& course);

// Runs each exercise the build left undecided; the logs go to out/logs/<trainee>/<id>.log.
void run_checks(const Trainee& t, const Course& c, const ExerciseFilters& filters,
                const CheckLimits& limits, const std::filesystem::path& out, TraineeScore& score);

}  // namespace course::grade
