// The race's leaderboard: every entry's metrics file (the race's first line with the recipe and
// the budget, then a line per epoch, common/train/training_loop.h) ranked by the best test
// accuracy reached within the budget, as a Markdown and a CSV table, plots of the validation
// and training accuracy against time (the entry named "reference" drawn as the reference run),
// and a static HTML page of both for instructors to publish.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace day3 {

struct EntryEpoch {
  int64_t epoch = 0;
  double elapsed_s = 0;  // since the run started, validation included
  double test_accuracy = 0;
  std::optional<double> train_accuracy;  // not with MixUp / CutMix
  double images_per_second = 0;
  // So far (the training loop's energy_meter.h): the measured energy (CPU packages and GPUs,
  // none when neither was readable) and the core-hours (none in older metrics files).
  std::optional<double> energy_j, core_hours;
};

struct RaceEntry {
  std::string name;
  std::string model, optimizer, schedule;
  int64_t batch_size = 0, image_size = 0, epochs = 0;
  double lr = 0, wd = 0;
  double budget_s = 0;
  std::vector<EntryEpoch> history;
};

inline constexpr char kReferenceEntry[] = "reference";

// Reads a race entry's metrics file; the entry is named after the file (runs/alice.jsonl:
// alice). A resumed run repeats no epoch: the last record of an epoch wins. Throws course::Error
// naming the file and line for anything else than the race's records.
RaceEntry read_entry(const std::string& path);

// The entries' metrics files in `folder` (*.jsonl), by name.
std::vector<RaceEntry> read_entries(const std::string& folder);

struct BoardRow {
  const RaceEntry* entry = nullptr;
  std::optional<EntryEpoch> best;  // the best test accuracy within the budget, the earliest
  double images_per_second = 0;    // mean over the epochs
};

// Best accuracy within the budget first; entries with no epoch within it last, by name.
std::vector<BoardRow> rank_entries(const std::vector<RaceEntry>& entries);

std::string board_markdown(const std::vector<BoardRow>& rows);
std::string board_csv(const std::vector<BoardRow>& rows);
std::string board_html(const std::vector<BoardRow>& rows, const std::string& title);

// Writes board.md, board.csv, validation.png, training.png and index.html into `folder`.
void write_board(const std::vector<RaceEntry>& entries, const std::string& folder,
                 const std::string& title);

}  // namespace day3
