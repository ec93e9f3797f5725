// The class's build in its work tree (class_build.h).
#include "tools/grade/class_build.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>

#include "common/core/error.h"
#include "tools/grade/system.h"

namespace course::grade {

namespace fs = std::filesystem;

std::string course_version(const fs::path& root) {
  if (!fs::exists(root / ".git")) return "the files of " + root.string();
  const TimedRun r =
      run_with_limit("git -C " + shell_quoted(root.string()) + " rev-parse HEAD", 60);
  COURSE_CHECK(r.status == 0, "cannot read the course's commit in ", root.string(), ": ", r.output);
  return "course commit " + first_line(r.output);
}

void clean_copy(const fs::path& root, const fs::path& into) {
  fs::create_directories(into);
  if (fs::exists(root / ".git")) {
    const TimedRun r =
        run_with_limit("git -C " + shell_quoted(root.string()) +
                           " archive --format=tar HEAD | tar -x -C " + shell_quoted(into.string()),
                       600);
    COURSE_CHECK(r.status == 0, "cannot copy the course from ", root.string(), ": ", r.output);
    fs::remove_all(into / "solutions");
    return;
  }
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("bazel-", 0) == 0 || name == ".git" || name == "solutions") continue;
    fs::copy(e.path(), into / name, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
}

Course read_course(const DaySpec& day, const fs::path& work) {
  Course c{day, work, {}, {}, {}, {}, {}};
  for (const std::string& f : day.files) {
    c.stubs[f] = read_text(work / day.day / f);
    for (const ExerciseRegion& r : exercise_regions(day.day + "/" + f, c.stubs[f])) {
      c.exercises.push_back(r.id);
      c.file_of[r.id] = f;
      c.stub_of[r.id] = r;
    }
  }
  // In the exercises' numbers' order (day 4's TP4.5 in exercises.cc, then TP4.6 in
  // pipeline_exercises.cc), whichever file holds them.
  const auto number = [](const std::string& id) { return std::stoi(id.substr(id.find('.') + 1)); };
  std::sort(c.exercises.begin(), c.exercises.end(),
            [&](const std::string& a, const std::string& b) { return number(a) < number(b); });
  return c;
}

void prepare(Trainee& t, const Course& c) {
  for (const std::string& f : c.day.files) {
    const auto given = t.submission.files.find(f);
    const std::string text = given == t.submission.files.end() ? c.stubs.at(f) : given->second;
    std::vector<ExerciseRegion> regions;
    try {
      regions = exercise_regions(f, text);
    } catch (const Error&) {
      regions.clear();  // markers broken: every exercise of the file is decided below
    }
    bool markers_lost = false;
    for (const auto& [id, file] : c.file_of) {
      if (file != f) continue;
      const auto r = std::find_if(regions.begin(), regions.end(),
                                  [&](const ExerciseRegion& x) { return x.id == id; });
      if (r == regions.end()) {
        t.decided[id] = {Verdict::kDidNotCompile,
                         f + " lost the BEGIN/END EXERCISE markers of " + id, ""};
        markers_lost = true;
      } else if (r->is_stub()) {
        t.decided[id] = {Verdict::kNotAttempted, "", ""};
      }
    }
    t.files[f] = markers_lost ? c.stubs.at(f) : text;
  }
}

void write_package(const Trainee& t, const Course& c) {
  const fs::path dir = c.work / t.package;
  write_text(dir / "BUILD", "load(\"//" + c.day.day + ":lab.bzl\", \"" + c.day.lab_macro +
                                "\")\n\n" + c.day.lab_macro + "()\n");
  for (const auto& [f, text] : t.files) write_text(dir / f, text);
}

namespace {

// Its output base beside the work tree, so that both go when grading ends (not one more output
// base under ~/.cache/bazel for every grading).
fs::path output_base_of(const fs::path& work) { return work.parent_path() / "bazel-output"; }

}  // namespace

std::string bazel(const Course& c) {
  return "cd " + shell_quoted(c.work.string()) +
         " && bazel --output_base=" + shell_quoted(output_base_of(c.work).string()) +
         " --max_idle_secs=120 ";
}

void kill_bazel_server(const fs::path& work) {
  std::ifstream pid_file(output_base_of(work) / "server/server.pid.txt");
  if (pid_t pid = 0; pid_file >> pid && pid > 0) kill(pid, SIGKILL);
}

std::vector<fs::path> hidden_from_build(const fs::path& root,
                                        const std::vector<std::string>& hand_ins,
                                        const fs::path& work) {
  std::vector<fs::path> candidates = {root};
  for (const std::string& spec : hand_ins) candidates.push_back(handed_in_path(spec));
  const fs::path tree = fs::weakly_canonical(work);
  std::vector<fs::path> hidden;
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    const fs::path p = fs::canonical(candidate, ec);
    if (ec) continue;  // a repository's remote, or a hand-in already refused
    const auto [where, inside] = std::mismatch(p.begin(), p.end(), tree.begin(), tree.end());
    if (where != p.end()) hidden.push_back(p);  // not an ancestor of the work tree
  }
  return hidden;
}

namespace {

// The build's sandbox flags: its compiles in linux-sandbox with `hidden` blocked, or none.
std::string build_sandbox_flags(const Course& c) {
  if (c.hidden_from_build.empty()) return "";
  std::string flags = " --strategy=CppCompile=linux-sandbox --sandbox_default_allow_network=false";
  for (const fs::path& p : c.hidden_from_build) {
    flags += " --sandbox_block_path=" + shell_quoted(p.string());
  }
  return flags;
}

// A failed build's verdict for `t`: its first compiler error in one of its files gives that
// exercise (or, outside every exercise, the whole file) "did not compile" and its stub back, and
// returns true (the package is built again); a failure of its package that is no compiler
// error of its own (a link error: a function removed) gives every exercise "does not link".
bool put_back_what_failed(Trainee& t, const std::string& output, const Course& c,
                          const std::string& log_name) {
  const std::regex error("(?:^|\\n)[^\\n]*?" + t.package +
                         "/([a-z_]+\\.cc):(\\d+):\\d+: error: ([^\\n]*)");
  std::smatch m;
  if (std::regex_search(output, m, error)) {
    const std::string file = m[1], message = m[3];
    const int line = std::stoi(m[2]);
    const std::vector<ExerciseRegion> regions = exercise_regions(file, t.files.at(file));
    const std::string where = file + ":" + std::to_string(line) + ": " + message;
    if (const ExerciseRegion* broken = region_at_line(regions, line)) {
      t.decided[broken->id] = {Verdict::kDidNotCompile, where, log_name};
      t.files[file] = with_body(t.files[file], broken->id, c.stub_of.at(broken->id).body);
    } else {
      for (const ExerciseRegion& x : regions) {
        if (!t.decided.count(x.id)) t.decided[x.id] = {Verdict::kDidNotCompile, where, log_name};
      }
      t.files[file] = c.stubs.at(file);
    }
    return true;
  }
  if (output.find("//" + t.package + ":") != std::string::npos &&
      std::regex_search(output, m, std::regex(t.package + "[^\\n]* failed[^\\n]*"))) {
    for (const std::string& id : c.exercises) {
      if (!t.decided.count(id)) {
        t.decided[id] = {Verdict::kDidNotCompile, "the check does not link: " + m.str(0), log_name};
      }
    }
  }
  return false;
}

}  // namespace

void build(std::vector<Trainee*>& trainees, const Course& c, const fs::path& build_log) {
  std::vector<Trainee*> pending = trainees;
  std::string log;
  const std::string log_name = build_log.filename().string();  // what the cells link to
  for (int round = 0; !pending.empty() && round <= static_cast<int>(c.exercises.size()); ++round) {
    std::string targets;
    for (const Trainee* t : pending) {
      for (const CheckBinary& b : c.day.checks) targets += " //" + t->package + ":" + b.target;
    }
    std::cout
        << "building " << pending.size() << " package(s) of checks"
        << (round > 0 ? " again, without what did not compile" : "")
        << (round == 0 && !c.hidden_from_build.empty()
                ? " (compiled in linux-sandbox: the course's checkout and the hand-ins hidden)"
                : "")
        << "\n"
        << std::flush;
    const TimedRun r = run_with_limit(bazel(c) + "build --keep_going --color=no --curses=no" +
                                          build_sandbox_flags(c) + targets + " 2>&1",
                                      3600);
    log += r.output;
    if (r.status == 0) break;
    std::vector<Trainee*> again;
    for (Trainee* t : pending) {
      if (!put_back_what_failed(*t, r.output, c, log_name)) continue;
      write_package(*t, c);
      again.push_back(t);
    }
    pending = again;
  }
  write_text(build_log, log);
}

}  // namespace course::grade
