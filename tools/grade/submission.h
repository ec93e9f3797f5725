// What a trainee hands in, as the grader takes it: a folder (their checkout of the course, or just
// their exercise files), a git repository ("repo" or "repo@branch"), or a .tar, .tar.gz, .tgz or
// .zip of their files; "name=SPEC" names the trainee (else the folder's or archive's name). Only
// the day's exercise files are taken; any other file of the course that the hand-in holds must
// be the course's own, or the trainee is refused with the file's name: the checks and the
// library are not the trainee's to change.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace course::grade {

// A day of the course as the grader builds and runs it.
struct CheckBinary {
  std::string target;      // in the trainee's package: "check", "check_ranks", "compress_check"
  std::vector<int> ranks;  // mpirun -np for each (none: run as one process)
};
struct DaySpec {
  std::string day;                 // "day2_ddp"
  std::string lab_macro;           // its lab.bzl's macro: "day2_lab"
  std::vector<std::string> files;  // the trainee's exercise files: "exercises.cc", ...
  std::vector<CheckBinary> checks;
};

// The course's days; throws naming the known ones for another.
const DaySpec& day_spec(const std::string& day);

struct Submission {
  std::string name;
  std::string source;                        // the SPEC given
  std::map<std::string, std::string> files;  // exercise file name -> text (the ones handed in)
  std::string refused;                       // why it is not graded ("" when it is)
  // The day's other files the hand-in holds that differ from the course's (line endings aside):
  // said in the trainee's row, never used (the course's are built).
  std::vector<std::string> differing;
  // What was handed in, for the record: a repository's commit, an archive's SHA-256, or each
  // exercise file's of a folder (12 hex digits, as `git log` and `sha256sum` begin them).
  std::string digest;
};

// The trainee's name SPEC gives: NAME of "NAME=PATH", else the folder's, archive's or repository's
// name (with "-BRANCH" for "repo@BRANCH").
std::string trainee_name(const std::string& spec);

// `text` with every character that a trainee's id cannot hold as '_' (a refused hand-in's row).
std::string as_trainee_id(std::string text);

// The folder, repository or archive SPEC hands in (without its NAME= and @REF).
std::string handed_in_path(const std::string& spec);
// SPEC with its path as the instructor meant it: a relative one from the folder `bazel run`
// started in (BUILD_WORKING_DIRECTORY), not the runfiles tree the grader runs in.
std::string spec_from_invocation(const std::string& spec);

// Reads SPEC into a submission (refused, before anything is written, when its name is not a
// trainee's id: letters, digits, '.', '_', '-'), unpacking archives and git trees under `scratch`;
// `course` is a clean copy of the course, against whose files the hand-in's others are compared.
Submission read_submission(const std::string& spec, const DaySpec& day, const std::string& course,
                           const std::string& scratch);

}  // namespace course::grade
