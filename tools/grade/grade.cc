// The class grader: every trainee's exercises of one day checked in one command, with a
// scorecard per exercise.
//   bazel run //tools/grade -- --day day3_data TRAINEE...        grade a class here
//   bazel run //tools/grade -- --day day2_ddp --slurm TRAINEE...  as a Slurm job array
//   bazel run //tools/grade -- --day day1_gpu --practice          my own tree, with the sheet
// Each TRAINEE is a folder, a git repository (repo@branch), or a .tar/.tar.gz/.zip of their files
// (submission.h). The grader copies the course as committed into its own work tree, puts each
// trainee's exercise files into a package of their own there (built like the solutions'
// package, from the day's lab.bzl), builds them all at once, and where a trainee's exercise does
// not compile puts that exercise's stub back and builds again, so their other exercises are still
// graded; the course's own stubs are built with them, and the check's suites are listed from
// those. Then each exercise's suites of the day's check run alone (on every rank count of a
// multi-rank check) under a time limit per exercise and per trainee, trainees in parallel, each
// trainee's runs in a bubblewrap sandbox (sandbox.h; --no-sandbox without one).
// Results: a terminal table, scorecard.csv and index.html (each cell linking to its log) in --out.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "common/core/error.h"
#include "common/core/invocation.h"
#include "common/core/text.h"
#include "tools/grade/check_results.h"
#include "tools/grade/check_runs.h"
#include "tools/grade/class_build.h"
#include "tools/grade/exercise_regions.h"
#include "tools/grade/sandbox.h"
#include "tools/grade/scorecard.h"
#include "tools/grade/slurm_array.h"
#include "tools/grade/submission.h"
#include "tools/grade/system.h"

namespace {

namespace fs = std::filesystem;
using namespace course;
using namespace course::grade;

struct Options {
  std::string day;
  std::vector<std::string> trainees;
  std::string out;
  std::string root;  // the course's checkout (bazel run: where it was started from)
  double exercise_limit = 120, trainee_limit = 1200;
  int jobs = 0;
  bool practice = false, slurm = false, keep_work = false, gather = false;
  bool sandbox = true;  // each trainee's runs in bubblewrap (sandbox.h); never in --practice
  int array_task = -1;  // grade trainee N alone, into results/ (a Slurm array's task)
  std::string build_log = "build.log";  // in --out (each array task its own)
  std::string partition, account, slurm_options;
  int time_minutes = 0;
};

// The sheet's section of exercise TPd.n: from its anchor ("tpdn", as the stubs name it) to the
// next exercise's anchor or the next part.
std::string sheet_section(const fs::path& course, const std::string& day, const std::string& id) {
  std::string anchor = "tp" + id.substr(2);
  anchor.erase(std::remove(anchor.begin(), anchor.end(), '.'), anchor.end());
  const std::string sheet = read_text(course / day / "README.md");
  const std::string start = "<a id=\"" + anchor + "\"></a>";
  const size_t begin = sheet.find(start);
  if (begin == std::string::npos) return "(the sheet has no section " + anchor + ")";
  const size_t from = begin + start.size();
  const size_t end = std::min(sheet.find("\n<a id=", from), sheet.find("\n## ", from));
  return sheet.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

void write_scorecard(const Scorecard& card, const Options& o) {
  const fs::path out(o.out);
  write_text(out / "scorecard.csv", scorecard_csv(card));
  write_text(out / "index.html", scorecard_html(card, card.day + ": the class's exercises"));
  std::cout << "\n"
            << scorecard_table(card) << "\nwrote " << (out / "scorecard.csv").string() << " and "
            << (out / "index.html").string() << "\n";
}

// Each hand-in read and its package written, or its refusal in its scores.
std::vector<Trainee> read_trainees(const std::vector<std::string>& specs, const Course& course,
                                   std::vector<TraineeScore>& scores) {
  const fs::path scratch = course.work.parent_path();
  std::vector<Trainee> trainees;
  for (size_t i = 0; i < specs.size(); ++i) {
    Trainee t;
    try {
      t.submission = read_submission(specs[i], course.day, course.work.string(),
                                     (scratch / "handed_in" / std::to_string(i)).string());
    } catch (const Error& e) {
      t.submission.name = specs[i];
      t.submission.refused = e.what();
    }
    // A name is a folder of the logs and a row of the scorecard: plain, and the trainee's own.
    std::string& name = t.submission.name;
    name = as_trainee_id(name);
    if (std::any_of(scores.begin(), scores.begin() + i,
                    [&](const auto& s) { return s.name == name; })) {
      t.submission.refused =
          "another trainee is named " + name + ": name them (NAME=" + specs[i] + ")";
      name += "-" + std::to_string(i);
    }
    scores[i].name = name;
    scores[i].hand_in = t.submission.digest;
    if (!t.submission.differing.empty()) {
      const std::vector<std::string>& differing = t.submission.differing;
      scores[i].note = joined(differing, ", ") + (differing.size() == 1 ? " differs" : " differ") +
                       " from the course's (not used: the course's files are built)";
    }
    if (!t.submission.refused.empty()) {
      for (const std::string& id : course.exercises) {
        scores[i].results[id] = {Verdict::kRefused, t.submission.refused, ""};
      }
      continue;
    }
    t.package = "graded/t" + std::to_string(i) + "/" + course.day.day;
    prepare(t, course);
    write_package(t, course);
    trainees.push_back(std::move(t));
  }
  return trainees;
}

// Trainees checked at once: --jobs, or as many as the cores hold the check's largest rank count.
int parallel_trainees(const Options& o, const Course& course) {
  if (o.jobs > 0) return o.jobs;
  int most_ranks = 1;
  for (const CheckBinary& b : course.day.checks) {
    for (const int r : b.ranks) most_ranks = std::max(most_ranks, r);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / most_ranks);
}

// Grades the given trainees here and returns their scores (in the given order).
std::vector<TraineeScore> grade(const Options& o, const std::vector<std::string>& specs,
                                Course& course) {
  std::vector<TraineeScore> scores(specs.size());
  std::vector<Trainee> trainees = read_trainees(specs, course, scores);
  if (trainees.empty()) return scores;
  Trainee stubs = course_stubs(course);
  std::vector<Trainee*> building = {&stubs};
  for (Trainee& t : trainees) building.push_back(&t);
  build(building, course, fs::path(o.out) / o.build_log);
  const ExerciseFilters filters = exercise_filters_of(stubs, course);
  const CheckLimits limits{o.exercise_limit, o.trainee_limit, o.sandbox};
  std::atomic<size_t> next{0};
  std::mutex print;
  const auto worker = [&] {
    for (size_t k; (k = next++) < trainees.size();) {
      const Trainee& t = trainees[k];
      const size_t index = std::stoul(t.package.substr(std::string("graded/t").size()));
      run_checks(t, course, filters, limits, o.out, scores[index]);
      std::lock_guard lock(print);
      std::cout << "graded " << t.submission.name << "\n" << std::flush;
    }
  };
  std::vector<std::thread> workers;
  for (int j = 0; j < parallel_trainees(o, course); ++j) workers.emplace_back(worker);
  for (std::thread& w : workers) w.join();
  run_with_limit(bazel(course) + "shutdown", 120);
  return scores;
}

// The grader's work folder (the work tree and its Bazel output base), outside the course's
// checkout (where bazel would see its packages), on the machine that grades (a Slurm task's
// node): removed when grading ends, however it ends (a signal too: system.h), unless kept.
struct WorkFolder {
  explicit WorkFolder(bool keep) : path(made_folder()), keep(keep) {}
  ~WorkFolder() { remove(); }
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;

  static fs::path made_folder() {
    std::string name = (fs::temp_directory_path() / "course-grade-XXXXXX").string();
    COURSE_CHECK(mkdtemp(name.data()) != nullptr, "cannot make a work folder in ",
                 fs::temp_directory_path().string());
    return name;
  }
  void remove() const {
    if (keep) return;
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec)
      std::cerr << "could not remove the work folder " << path.string() << ": " << ec.message()
                << "\n";
  }

  const fs::path path;
  const bool keep;
  const WhenStopped on_stop{[this] {
    kill_bazel_server(path / "course");
    remove();
  }};
};

// The Slurm array's last job: the scorecard from every task's results/.
int gather(const Options& o, const DaySpec& day) {
  Scorecard card{o.day, {}, {}, course_version(o.root)};
  const fs::path results = fs::path(o.out) / "results";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(results)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    for (TraineeScore& t : trainees_from_csv(read_text(f))) card.trainees.push_back(std::move(t));
  }
  card.exercises = read_course(day, fs::path(o.root)).exercises;
  write_scorecard(card, o);
  return 0;
}

// --practice: the sheet's section of each exercise that did not pass, under its verdict.
void print_sheet_of_what_failed(const Scorecard& card, const fs::path& root,
                                const std::string& day) {
  for (const TraineeScore& t : card.trainees) {
    for (const std::string& id : card.exercises) {
      const ExerciseResult& r = t.results.at(id);
      if (r.verdict == Verdict::kPassed) continue;
      std::cout << "\n== " << id << " " << verdict_name(r.verdict)
                << (r.message.empty() ? "" : ": " + r.message) << "\n";
      std::cout << sheet_section(root, day, id) << "\n";
    }
  }
}

int run(Options o) {
  const DaySpec& day = day_spec(o.day);
  COURSE_CHECK(fs::is_directory(fs::path(o.root) / day.day), "--root ", o.root,
               " is not a checkout of the course: it has no ", day.day, "/");
  if (o.gather) return gather(o, day);
  if (o.practice && o.trainees.empty()) o.trainees = {"you=" + o.root};
  if (o.practice) o.sandbox = false;  // one's own code
  if (o.sandbox && !o.slurm) {
    const auto why = sandbox_unavailable();
    COURSE_CHECK(!why, "the trainees' checks run in a sandbox, and ", *why,
                 "; --no-sandbox grades without one (hand-ins you trust only)");
  }
  COURSE_CHECK(!o.trainees.empty(),
               "no trainee to grade: give their folders, repositories or archives");
  fs::create_directories(o.out);
  o.out = fs::canonical(o.out).string();
  if (o.slurm) {
    submit_grading_array({.day = o.day,
                          .out = o.out,
                          .root = o.root,
                          .exercise_limit = o.exercise_limit,
                          .trainee_limit = o.trainee_limit,
                          .trainees = o.trainees,
                          .partition = o.partition,
                          .account = o.account,
                          .extra_options = o.slurm_options,
                          .time_minutes = o.time_minutes,
                          .sandbox = o.sandbox});
    return 0;
  }
  std::vector<std::string> specs = o.trainees;
  if (o.array_task >= 0) {
    COURSE_CHECK(o.array_task < static_cast<int>(specs.size()), "array task ", o.array_task, " of ",
                 specs.size(), " trainees");
    specs = {specs[o.array_task]};
    o.build_log = "build-task-" + std::to_string(o.array_task) + ".log";
  }
  const WorkFolder folder(o.keep_work);
  const fs::path work = folder.path / "course";
  clean_copy(o.root, work);
  Course course = read_course(day, work);
  if (o.sandbox) course.hidden_from_build = hidden_from_build(o.root, o.trainees, work);
  Scorecard card{o.day, course.exercises, grade(o, specs, course), course_version(o.root)};
  if (o.keep_work) std::cout << "the work tree: " << work.string() << "\n";
  if (o.array_task >= 0) {
    write_text(
        fs::path(o.out) / "results" / (std::to_string(1000000 + o.array_task).substr(1) + ".csv"),
        scorecard_csv(card));
    return 0;
  }
  write_scorecard(card, o);
  if (o.practice) print_sheet_of_what_failed(card, o.root, day.day);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  stop_cleanly_on_signals();
  Options o;
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  const char* working = std::getenv("BUILD_WORKING_DIRECTORY");
  o.root = workspace != nullptr ? workspace : ".";
  CLI::App app("Grade a class's exercises of one day: a scorecard per exercise");
  app.add_option("trainees", o.trainees,
                 "each trainee's folder, git repository (repo@branch) or .tar/.tar.gz/.zip; "
                 "name=SPEC names them");
  app.add_option("--day", o.day, "day1_gpu, day2_ddp, day3_data or day4_large_models")->required();
  app.add_option("--out", o.out, "where the scorecard, logs and work tree go (default grades/DAY)");
  app.add_option("--root", o.root, "the course's checkout (default: the workspace)")
      ->capture_default_str();
  app.add_option("--exercise-limit", o.exercise_limit, "seconds for one exercise's checks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--trainee-limit", o.trainee_limit, "seconds for all of a trainee's checks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--jobs", o.jobs,
                 "trainees checked at once (default: cores / the check's largest rank count)");
  app.add_flag("--practice", o.practice,
               "grade my own tree (default trainee: the workspace) and print the sheet of what did "
               "not pass");
  app.add_flag("--slurm", o.slurm,
               "grade as a Slurm job array, one trainee per task, then gather the scorecard");
  app.add_option("--partition", o.partition, "--slurm: the partition");
  app.add_option("--account", o.account, "--slurm: the account charged");
  app.add_option("--time", o.time_minutes, "--slurm: each task's time limit in minutes")
      ->check(CLI::PositiveNumber);
  app.add_option("--slurm-options", o.slurm_options, "--slurm: more sbatch options, as one word");
  app.add_flag("--keep-work", o.keep_work, "keep the work tree the trainees were built in");
  app.add_flag("!--no-sandbox", o.sandbox,
               "run the trainees' checks without bubblewrap's sandbox (hand-ins you trust only)");
  app.add_option("--array-task", o.array_task,
                 "grade only trainee N into results/ (what each array task runs)")
      ->group("");
  app.add_flag("--gather", o.gather, "make the scorecard from results/ (the array's last job)")
      ->group("");
  CLI11_PARSE(app, argc, argv);
  if (o.out.empty())
    o.out = (fs::path(working != nullptr ? working : ".") / "grades" / o.day).string();
  o.out = invocation_path(o.out);
  for (std::string& trainee : o.trainees) trainee = spec_from_invocation(trainee);
  try {
    o.root = fs::canonical(invocation_path(o.root)).string();
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
