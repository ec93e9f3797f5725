// The sheets' measured tables regenerated on the machine that runs this:
//   bazel run //tools/labsheet:figures -- [--sheet day2] [--only TEXT] [--write] [--cheap]
//                                         [--list]
// For every figure a sheet declares (sheet_figures.h) it runs the figure's command from the
// workspace, prints the table as measured with each figure that moved beyond the figure's
// tolerance marked beside the sheet's, and whether a comparison the text draws (a claim) still
// holds. --write puts the measured tables, with the command, this machine and the date, into
// the sheets: what an instructor runs on their cluster before a course. It fails only when a
// command fails, a sheet's table no longer has the shape the program prints or a computed table
// (a model's, the same on every machine) moved, never for a measured figure that moved. --list
// names every figure, where it is and its command, and runs nothing.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/core/error.h"
#include "tools/grade/system.h"
#include "tools/labsheet/sheet_figures.h"

namespace {

namespace fs = std::filesystem;
using namespace course;
using namespace course::labsheet;

const std::vector<std::pair<std::string, std::string>> kSheets = {
    {"readme", "README.md"},
    {"day1", "day1_gpu/README.md"},
    {"day2", "day2_ddp/README.md"},
    {"day3", "day3_data/README.md"},
    {"day4", "day4_large_models/README.md"},
    {"results", "bench/RESULTS.md"},
};

struct Options {
  std::string root;                 // the workspace (bazel run: where it was started from)
  std::string bin_dir;              // what the commands' bazel-bin/ stands for (default bazel-bin)
  std::vector<std::string> sheets;  // readme, day1 ... day4, results (default all)
  std::string only;                 // figures whose command contains this
  bool write = false, cheap = false, list = false;
};

bool selected(const Figure& f, const Options& o) {
  return (!o.cheap || f.cheap) && (o.only.empty() || f.command.find(o.only) != std::string::npos);
}

// The sheet's command as this machine runs it: bazel-bin/ where the binaries are, and mpirun
// allowed to run as root with more ranks than cores, as the sheets say it needs then.
std::string as_run_here(std::string command, const Options& o) {
  if (!o.bin_dir.empty()) {
    for (size_t at = 0; (at = command.find("bazel-bin/", at)) != std::string::npos;) {
      command.replace(at, 10, o.bin_dir + "/");
      at += o.bin_dir.size() + 1;
    }
  }
  if (command.rfind("mpirun ", 0) == 0) {
    command.insert(7,
                   "--oversubscribe " + std::string(geteuid() == 0 ? "--allow-run-as-root " : ""));
  }
  return "cd '" + o.root + "' && " + command;
}

struct Machine {
  std::string description;  // "2 cores of an Intel(R) Xeon(R) Processor, no GPU"
  bool has_gpu = false;
};

// This machine, from /proc/cpuinfo and nvidia-smi.
Machine this_machine() {
  std::string cpu = "an unnamed CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  const course::grade::TimedRun query =
      course::grade::run_with_limit("nvidia-smi --query-gpu=name --format=csv,noheader", 60);
  const std::string cores = std::to_string(std::thread::hardware_concurrency()) + " cores of ";
  const std::string& gpus = query.output;
  if (query.status != 0 || gpus.empty()) return {cores + cpu + ", no GPU", false};
  const size_t count = std::count(gpus.begin(), gpus.end(), '\n');
  return {cores + cpu + ", " + std::to_string(count) + " x " + gpus.substr(0, gpus.find('\n')),
          true};
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  return date;
}

// The measured table in markdown with each moved cell as "measured (sheet: was) !".
void print_comparison(const Table& measured, const Comparison& c) {
  Table shown = measured;
  for (const Drift& d : c.drifts) {
    shown.rows[d.row][d.column] = d.measured + " (sheet: " + d.sheet + ") !";
  }
  std::cout << markdown(shown);
  for (const std::string& e : c.shape_errors) std::cout << "shape: " << e << "\n";
  if (c.shape_errors.empty()) {
    std::cout << c.drifts.size() << " of " << c.numbers << " figures moved beyond the tolerance\n";
  }
  if (c.claim) {
    std::cout << "claim \"" << c.claim->claim << "\": the sheet's table says " << c.claim->sheet_row
              << ", measured " << c.claim->measured_row
              << (c.claim->changed() ? "  ! the text's comparison changed" : "") << "\n";
  }
}

// The sheets chosen, with their text.
std::vector<std::pair<std::string, std::string>> chosen_sheets(const Options& o) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, path] : kSheets) {
    if (o.sheets.empty() || std::find(o.sheets.begin(), o.sheets.end(), name) != o.sheets.end()) {
      out.emplace_back(path, course::grade::read_text(fs::path(o.root) / path));
    }
  }
  return out;
}

int list(const Options& o) {
  int figures = 0;
  for (const auto& [path, text] : chosen_sheets(o)) {
    for (const Figure& f : find_figures(path, text)) {
      if (!selected(f, o)) continue;
      ++figures;
      std::cout << path << ":" << f.open_line + 1 << (f.computed ? "  computed" : "  measured")
                << (f.cheap ? ", cheap" : "") << (f.gpu ? ", on a GPU" : "") << "  " << f.command
                << "\n";
    }
  }
  std::cout << figures << " tables\n";
  return 0;
}

struct Tally {
  int figures = 0, moved_tables = 0, changed_claims = 0, failures = 0, without_gpu = 0;
};

// One figure: its command run, its table compared with the sheet's and, with --write, put into
// the sheet's `text`.
void remake(const Figure& f, const Options& o, const Machine& machine, const std::string& date,
            std::string& text, Tally& tally) {
  std::cout << "\n== " << f.sheet << ":" << f.open_line + 1 << "  " << f.command << "\n"
            << std::flush;
  if (f.gpu && !machine.has_gpu) {
    std::cout << "measured on a GPU, and this machine has none: the sheet's table stays\n";
    ++tally.without_gpu;
    return;
  }
  ++tally.figures;
  // A benchmark or a sweep: minutes at most, an hour is a hang.
  const course::grade::TimedRun run =
      course::grade::run_with_limit(as_run_here(f.command, o), 3600);
  const int status = run.timed_out ? 124 : run.status;
  if (status != 0) {
    std::cout << "the command failed (exit " << status << "):\n" << run.output;
    ++tally.failures;
    return;
  }
  Table measured;
  try {
    measured = table_from_output(run.output, f.table_start);
  } catch (const Error& e) {
    std::cout << e.what() << "; the output was:\n" << run.output;
    ++tally.failures;
    return;
  }
  const Comparison c = compare(f, measured);
  print_comparison(measured, c);
  if (!c.shape_errors.empty() && !o.write) ++tally.failures;
  if (!c.drifts.empty()) ++tally.moved_tables;
  if (c.claim && c.claim->changed()) ++tally.changed_claims;
  if (f.computed && !c.drifts.empty() && !o.write) {
    std::cout << "a computed table moved: the code changed its figures (--write puts them in)\n";
    ++tally.failures;
  }
  if (o.write) {
    const std::string made =
        f.computed ? "Computed by `" + f.command + "`, " + date
                   : "Measured with `" + f.command + "` on " + machine.description + ", " + date;
    text = replace_figure(text, f, made + ":\n\n" + markdown(measured));
  }
}

int run(const Options& o) {
  const Machine machine = this_machine();
  const std::string date = today();
  Tally tally;
  for (auto [path, text] : chosen_sheets(o)) {
    const std::vector<Figure> found = find_figures(path, text);
    // From the last, so that a rewritten figure leaves the line numbers above it as they were.
    for (auto f = found.rbegin(); f != found.rend(); ++f) {
      if (selected(*f, o)) remake(*f, o, machine, date, text, tally);
    }
    if (o.write && !found.empty()) {
      std::ofstream(fs::path(o.root) / path) << text;
      std::cout << "wrote " << path << "\n";
    }
  }
  std::cout << "\n"
            << tally.figures << " tables measured on " << machine.description << ": "
            << tally.moved_tables << " with figures beyond their tolerance, "
            << tally.changed_claims << " claims changed, " << tally.failures << " failed";
  if (tally.without_gpu > 0) std::cout << "; " << tally.without_gpu << " need a GPU";
  std::cout << "\n";
  return tally.failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  o.root = workspace != nullptr ? workspace : ".";
  CLI::App app("Regenerate the lab sheets' measured tables and compare them with the sheets'");
  app.add_option("--root", o.root, "the course's checkout")->capture_default_str();
  app.add_option("--bin-dir", o.bin_dir, "where the commands' bazel-bin/ binaries are");
  app.add_option("--sheet", o.sheets, "readme, day1, day2, day3, day4 or results (default: all)")
      ->check(CLI::IsMember({"readme", "day1", "day2", "day3", "day4", "results"}));
  app.add_option("--only", o.only, "only the figures whose command contains this");
  app.add_flag("--write", o.write, "put the measured tables into the sheets");
  app.add_flag("--cheap", o.cheap, "only the figures marked cheap (the test suite's smoke run)");
  app.add_flag("--list", o.list, "name the figures and their commands, and run nothing");
  CLI11_PARSE(app, argc, argv);
  try {
    return o.list ? list(o) : run(o);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
