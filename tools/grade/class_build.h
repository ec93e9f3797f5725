// The class's build in a work tree of its own: the course as committed, each trainee's
// exercise files in a package of their own built by the day's lab.bzl macro (as solutions/<day>
// is), all built at once; an exercise that does not compile gets its stub back (and its verdict)
// and the trainee is built again, so their other exercises are still graded.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tools/grade/check_results.h"
#include "tools/grade/exercise_regions.h"
#include "tools/grade/submission.h"

namespace course::grade {

// One trainee being graded.
struct Trainee {
  Submission submission;
  std::string package;                            // "graded/t3/day2_ddp"
  std::map<std::string, std::string> files;       // what the package builds, by name
  std::map<std::string, ExerciseResult> decided;  // before the check runs
};

struct Course {
  DaySpec day;
  std::filesystem::path work;                     // the clean copy the trainees build in
  std::map<std::string, std::string> stubs;       // exercise file -> the course's stub text
  std::vector<std::string> exercises;             // in file order
  std::map<std::string, std::string> file_of;     // exercise id -> its file
  std::map<std::string, ExerciseRegion> stub_of;  // exercise id -> the course's stub region
  // What the build's compilers may not read (hidden_from_build); none: Bazel's usual sandbox.
  std::vector<std::filesystem::path> hidden_from_build;
};

// The course as committed (git archive of HEAD), or the tree as it is where it is not a git
// checkout; never its build outputs, and never its solutions/ (a class's packages do not build
// them, and neither a trainee's #include nor their binary can then reach them).
void clean_copy(const std::filesystem::path& root, const std::filesystem::path& into);
// What clean_copy copies, in words: "course commit <hash>" of a git checkout, else "the files of
// ROOT".
std::string course_version(const std::filesystem::path& root);

// The day's exercises, their files and the course's stubs, from a copy of the course.
Course read_course(const DaySpec& day, const std::filesystem::path& work);

// The trainee's files as their package gets them (missing ones the stubs; a file whose exercise
// markers are broken the stub, its exercises not compiled), with the exercises already decided
// (not attempted: still the stub).
void prepare(Trainee& t, const Course& c);
void write_package(const Trainee& t, const Course& c);

// `cd WORK && bazel ...` for the work tree (its server leaves soon after the last command; its
// output base lies beside the work tree, and goes with it).
std::string bazel(const Course& c);
// The work tree's Bazel server killed at once (grading stopped by a signal), if it runs.
void kill_bazel_server(const std::filesystem::path& work);

// The paths the class's build hides from its compilers, so that no trainee's `#include` of an
// absolute path reaches them: the instructor's checkout (its solutions) and every hand-in as it
// was given (`hand_ins`' paths), leaving out any that holds the work tree. The compiles then
// run in Bazel's linux-sandbox (a mount namespace of their own, the system read-only, those
// paths blocked, no network); the links, which read only objects, do not (in it they cost a
// quarter of the class's grading time). The other trainees' copies in the work tree stay
// readable to a compiler: the build reads them through the same tree (their binaries' runs
// cannot: sandbox.h).
std::vector<std::filesystem::path> hidden_from_build(const std::filesystem::path& root,
                                                     const std::vector<std::string>& hand_ins,
                                                     const std::filesystem::path& work);

// Builds the packages' check binaries (each trainee's, the course's stubs), putting stubs back
// until every package builds or nothing is left to take out; the build's output goes to
// `build_log`.
void build(std::vector<Trainee*>& trainees, const Course& c,
           const std::filesystem::path& build_log);

}  // namespace course::grade
