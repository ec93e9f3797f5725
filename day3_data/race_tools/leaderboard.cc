// `bazel run //day3_data/race_tools:leaderboard -- --runs race/runs --out race/board`: the race's
// leaderboard from every entry's metrics file (day3_data/race_tools/race_board.h): prints the table
// and writes board.md, board.csv, validation.png, training.png and index.html.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"
#include "day3_data/race_tools/race_board.h"

int main(int argc, char** argv) {
  std::string runs, out = "board", title = "Race leaderboard";
  CLI::App app(
      "The race's leaderboard: entries ranked by their best test accuracy within the budget, "
      "with plots of validation and training accuracy against time");
  app.add_option("--runs", runs, "folder of the entries' metrics files (<name>.jsonl)")->required();
  app.add_option("--out", out, "folder for the board (made if missing)")->capture_default_str();
  app.add_option("--title", title, "the page's title")->capture_default_str();
  course::train::parse_or_exit(app, argc, argv);
  return course::train::lab_main([&] {
    const std::string runs_folder = course::train::invocation_path(runs);
    const std::string out_folder = course::train::invocation_path(out);
    const std::vector<day3::RaceEntry> entries = day3::read_entries(runs_folder);
    std::filesystem::create_directories(out_folder);
    day3::write_board(entries, out_folder, title);
    std::printf(
        "%s\nboard written to %s (index.html, board.md, board.csv, validation.png, "
        "training.png)\n",
        day3::board_markdown(day3::rank_entries(entries)).c_str(), out_folder.c_str());
  });
}
