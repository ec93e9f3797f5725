// A class's results: one row per trainee, one column per exercise, written as a terminal table,
// a CSV (one line per trainee and exercise: what a spreadsheet or a test reads) and an HTML page
// whose cells link to their logs. A Slurm array's tasks each write their trainee's CSV and the
// gathering job reads them back.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/grade/check_results.h"

namespace course::grade {

struct TraineeScore {
  std::string name;
  std::map<std::string, ExerciseResult> results;  // by exercise id
  std::string note;     // about the hand-in as a whole (its files that differ from the course's)
  std::string hand_in;  // what was graded: its commit or digest (Submission::digest)
};

struct Scorecard {
  std::string day;
  std::vector<std::string> exercises;  // in the sheet's order
  std::vector<TraineeScore> trainees;  // in the order given
  std::string course;                  // what was graded against: the course's commit
};

// An exercise's class totals: passed, attempted (neither the stub nor refused), trainees.
struct ExerciseTotals {
  int passed = 0, attempted = 0, trainees = 0;
};
ExerciseTotals totals_of(const Scorecard& card, const std::string& id);

// Rows "trainee,exercise,verdict,message,log,seconds,note,hand_in", quoted where needed, under a
// header line (the trainee's note and hand-in on each of its rows).
std::string scorecard_csv(const Scorecard& card);
// The trainees' rows of such a CSV (a task's own, or a whole scorecard's).
std::vector<TraineeScore> trainees_from_csv(const std::string& csv);

// The course's commit, short cells ("ok", "FAIL", "CRASH", "TIME", "COMPILE", "todo",
// "REFUSED"), the class's totals, a legend, then each trainee's note and messages for what did
// not pass.
std::string scorecard_table(const Scorecard& card);

std::string scorecard_html(const Scorecard& card, const std::string& title);

}  // namespace course::grade
