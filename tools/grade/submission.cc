// A trainee's hand-in read into the day's exercise files (submission.h).
#include "tools/grade/submission.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/core/error.h"
#include "common/core/invocation.h"
#include "common/core/text.h"
#include "tools/grade/system.h"

namespace course::grade {

namespace fs = std::filesystem;

namespace {

const std::vector<DaySpec> kDays = {
    {"day1_gpu", "day1_lab", {"exercises.cc"}, {{"check", {}}}},
    {"day2_ddp", "day2_lab", {"exercises.cc"}, {{"check_ranks", {2, 3, 4}}}},
    {"day3_data", "day3_lab", {"exercises.cc"}, {{"check", {}}}},
    {"day4_large_models",
     "day4_lab",
     {"exercises.cc", "pipeline_exercises.cc"},
     {{"check_ranks", {2, 3, 4}}, {"compress_check", {}}}},
};

void run_or_fail(const std::string& command, const std::string& what) {
  COURSE_CHECK(run_with_limit(command, 600).status == 0, "cannot ", what);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The hand-in as a folder: itself, or what its archive or git tree unpacks to.
fs::path unpacked(const std::string& path, const std::string& ref, const fs::path& into) {
  if (fs::is_directory(path) && ref.empty() && !fs::exists(fs::path(path) / "HEAD")) return path;
  fs::create_directories(into);
  if (fs::is_directory(path)) {  // a git repository, its working tree's or a bare one
    run_or_fail("git -C " + shell_quoted(path) + " archive --format=tar " +
                    shell_quoted(ref.empty() ? "HEAD" : ref) + " | tar -x -C " +
                    shell_quoted(into.string()),
                "read " + (ref.empty() ? "HEAD" : ref) + " of the git repository " + path);
  } else if (ends_with(path, ".zip")) {
    run_or_fail("unzip -q " + shell_quoted(path) + " -d " + shell_quoted(into.string()),
                "unzip " + path);
  } else if (ends_with(path, ".tar") || ends_with(path, ".tar.gz") || ends_with(path, ".tgz")) {
    run_or_fail("tar -xf " + shell_quoted(path) + " -C " + shell_quoted(into.string()),
                "untar " + path);
  } else {
    COURSE_FAIL(path, " is not a folder, a git repository, a .tar, .tar.gz, .tgz or .zip");
  }
  // An archive of one folder: that folder.
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(into)) entries.push_back(e.path());
  if (entries.size() == 1 && fs::is_directory(entries[0])) return entries[0];
  return into;
}

// The first 12 hex digits of `file`'s SHA-256.
std::string sha256_start(const fs::path& file) {
  const TimedRun r = run_with_limit("sha256sum " + shell_quoted(file.string()), 120);
  COURSE_CHECK(r.status == 0 && r.output.size() >= 12, "cannot read the SHA-256 of ", file.string(),
               ": ", r.output);
  return r.output.substr(0, 12);
}

// Submission::digest of the hand-in at `path` (@`ref`), whose exercise files were `taken`.
std::string digest_of(const std::string& path, const std::string& ref,
                      const std::vector<fs::path>& taken) {
  const bool folder = fs::is_directory(path);
  if (folder && (!ref.empty() || fs::exists(fs::path(path) / "HEAD"))) {
    const std::string commit = (ref.empty() ? "HEAD" : ref) + "^{commit}";
    const TimedRun r = run_with_limit(
        "git -C " + shell_quoted(path) + " rev-parse --short=12 " + shell_quoted(commit), 60);
    COURSE_CHECK(r.status == 0, "cannot read the commit of ", path, ": ", r.output);
    return "commit " + first_line(r.output);
  }
  if (!folder) return "sha256 " + sha256_start(path);
  std::vector<std::string> files;
  for (const fs::path& f : taken)
    files.push_back(f.filename().string() + " sha256 " + sha256_start(f));
  return joined(files, ", ");
}

bool is_id_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
}

// A trainee's id names a folder of the logs and a row of the scorecard: letters, digits, '.',
// '_' and '-' only, and not "." or "..".
bool is_trainee_id(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), is_id_char);
}

// "NAME=PATH" as NAME and PATH; a SPEC without a name (or starting with '=') as "" and itself.
std::pair<std::string, std::string> name_and_path(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return {"", spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

std::string default_name(std::string path, const std::string& ref) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".tar.gz", ".tgz", ".tar", ".zip", ".git"}) {
    if (ends_with(name, ext)) name = name.substr(0, name.size() - std::string(ext).size());
  }
  return ref.empty() ? name : name + "-" + ref;
}

// `text` with Windows line endings made Unix ones (an editor's, not a change).
std::string without_carriage_returns(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  return text;
}

}  // namespace

const DaySpec& day_spec(const std::string& day) {
  for (const DaySpec& d : kDays) {
    if (d.day == day) return d;
  }
  COURSE_FAIL("no day ", day, ": day1_gpu, day2_ddp, day3_data or day4_large_models");
}

std::string as_trainee_id(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char ch) { return !is_id_char(ch); }, '_');
  return text;
}

std::string spec_from_invocation(const std::string& spec) {
  const auto [name, path] = name_and_path(spec);
  return (name.empty() ? "" : name + "=") + invocation_path(path);
}

namespace {

// SPEC's parts: "NAME=" (or none), the path, "@REF" (or none).
struct SpecParts {
  std::string name, path, ref;
};

SpecParts parts_of(const std::string& spec) {
  SpecParts parts;
  std::tie(parts.name, parts.path) = name_and_path(spec);
  if (const size_t at = parts.path.rfind('@'); at != std::string::npos && !fs::exists(parts.path)) {
    parts.ref = parts.path.substr(at + 1);
    parts.path = parts.path.substr(0, at);
  }
  return parts;
}

}  // namespace

std::string handed_in_path(const std::string& spec) { return parts_of(spec).path; }

std::string trainee_name(const std::string& spec) {
  const SpecParts parts = parts_of(spec);
  return parts.name.empty() ? default_name(parts.path, parts.ref) : parts.name;
}

Submission read_submission(const std::string& spec, const DaySpec& day, const std::string& course,
                           const std::string& scratch) {
  Submission s;
  s.source = spec;
  const SpecParts parts = parts_of(spec);
  const std::string &path = parts.path, &ref = parts.ref;
  COURSE_CHECK(fs::exists(path), "the hand-in ", path, " does not exist");
  s.name = trainee_name(spec);
  // Checked before anything is written; the hand-in unpacks into its own folder, not its name's.
  COURSE_CHECK(is_trainee_id(s.name), "the hand-in ", spec, " is named '", s.name,
               "', not a trainee's id (letters, digits, '.', '_', '-'): name it ID=",
               name_and_path(spec).second);
  const fs::path root = unpacked(path, ref, fs::path(scratch) / "unpacked");
  const bool checkout = fs::exists(root / day.day);
  std::vector<fs::path> taken;
  for (const std::string& f : day.files) {
    const fs::path file = checkout ? root / day.day / f : root / f;
    if (!fs::exists(file)) continue;
    s.files[f] = read_text(file);
    taken.push_back(file);
  }
  if (s.files.empty()) {
    s.refused = "no exercise file of " + day.day + " in the hand-in (" + day.files.front() +
                " or " + day.day + "/" + day.files.front() + ")";
    return s;
  }
  s.digest = digest_of(path, ref, taken);
  // The day's other files: the course's are built, a hand-in's different ones only said.
  const fs::path theirs_base = checkout ? root / day.day : root;
  const fs::path course_day = fs::path(course) / day.day;
  for (const auto& entry : fs::recursive_directory_iterator(course_day)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), course_day).string();
    const fs::path theirs = theirs_base / relative;
    if (s.files.count(relative) || !fs::is_regular_file(theirs)) continue;
    if (without_carriage_returns(read_text(theirs)) != read_text(entry.path())) {
      s.differing.push_back(day.day + "/" + relative);
    }
  }
  std::sort(s.differing.begin(), s.differing.end());
  return s;
}

}  // namespace course::grade
