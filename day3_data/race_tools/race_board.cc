// The race's leaderboard (see race_board.h).
#include "day3_data/race_tools/race_board.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/core/gnuplot.h"
#include "common/core/text.h"

namespace day3 {

using course::format_number;
using course::format_percent;
using course::html_escaped;

namespace {

// The recipe and budget of the race's first line.
void read_header(const nlohmann::json& line, RaceEntry& entry) {
  const nlohmann::json& recipe = line.at("recipe");
  entry.model = recipe.at("model").get<std::string>();
  entry.optimizer = recipe.at("optimizer").get<std::string>();
  entry.schedule = recipe.at("schedule").get<std::string>();
  entry.batch_size = recipe.at("batch_size").get<int64_t>();
  entry.image_size = recipe.at("image_size").get<int64_t>();
  entry.epochs = recipe.at("epochs").get<int64_t>();
  entry.lr = recipe.at("lr").get<double>();
  entry.wd = recipe.at("wd").get<double>();
  entry.budget_s = line.at("race").at("budget_s").get<double>();
}

EntryEpoch read_epoch(const nlohmann::json& line) {
  EntryEpoch e{.epoch = line.at("epoch").get<int64_t>(),
               .elapsed_s = line.at("elapsed_s").get<double>(),
               .test_accuracy = line.at("test_accuracy").get<double>(),
               .images_per_second = line.at("images_per_second").get<double>()};
  if (line.contains("train_accuracy")) e.train_accuracy = line["train_accuracy"].get<double>();
  for (const char* source : {"energy_cpu_j", "energy_gpu_j"}) {
    if (line.contains(source) && line[source].is_number()) {
      e.energy_j = e.energy_j.value_or(0) + line[source].get<double>();
    }
  }
  if (line.contains("core_hours")) e.core_hours = line["core_hours"].get<double>();
  return e;
}

bool within_budget(const RaceEntry& entry, const EntryEpoch& e) {
  return e.elapsed_s <= entry.budget_s;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string seconds(double s) { return fixed(s, 0); }

// The columns of every table: name, model, optimizer, batch, image size, lr, wd, best top-1 (%),
// time to best (s), epochs run, images/s, the energy (kJ) and core-hours spent to the best.
std::vector<std::string> row_cells(const BoardRow& row) {
  const RaceEntry& e = *row.entry;
  return {e.name,
          e.model,
          e.optimizer,
          std::to_string(e.batch_size),
          std::to_string(e.image_size),
          format_number(e.lr),
          format_number(e.wd),
          row.best ? format_percent(row.best->test_accuracy) : "-",
          row.best ? seconds(row.best->elapsed_s) : "-",
          std::to_string(e.history.size()),
          seconds(row.images_per_second),
          row.best && row.best->energy_j ? fixed(*row.best->energy_j / 1e3, 1) : "-",
          row.best && row.best->core_hours ? fixed(*row.best->core_hours, 3) : "-"};
}

const std::vector<std::string>& column_names() {
  static const std::vector<std::string> names = {"name",
                                                 "model",
                                                 "optimizer",
                                                 "batch",
                                                 "image size",
                                                 "lr",
                                                 "wd",
                                                 "best top-1 (%)",
                                                 "time to best (s)",
                                                 "epochs",
                                                 "images/s",
                                                 "energy to best (kJ)",
                                                 "core-hours to best"};
  return names;
}

// Accuracy (test, or training when `training`) against seconds, one line per entry, the
// reference in black and dashed, the budget as a vertical line.
void plot_accuracy(const std::vector<RaceEntry>& entries, bool training, const std::string& path) {
  std::ostringstream blocks, plot;
  double budget = 0, last = 0;
  int lines = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const RaceEntry& entry = entries[i];
    budget = std::max(budget, entry.budget_s);
    blocks << "$entry" << i << " << EOD\n";
    bool any = false;
    for (const EntryEpoch& e : entry.history) {
      const std::optional<double> value =
          training ? e.train_accuracy : std::optional<double>(e.test_accuracy);
      if (!value) continue;
      blocks << e.elapsed_s << " " << 100 * *value << "\n";
      last = std::max(last, e.elapsed_s);
      any = true;
    }
    blocks << "EOD\n";
    if (!any) continue;
    const bool reference = entry.name == kReferenceEntry;
    plot << (lines++ ? ", " : "plot ") << "$entry" << i << " using 1:2 with linespoints "
         << (reference ? "lc rgb 'black' dt 2 pt 6" : "pt 7") << " title '" << entry.name << "'";
  }
  std::ostringstream script;
  script << "set output '" << path << "'\n"
         << blocks.str() << "set title '" << (training ? "training" : "validation")
         << " accuracy of each entry (budget " << seconds(budget) << " s)' noenhanced\n"
         << "set xlabel 'seconds'\nset xrange [0:*]\n"
         << "set ylabel '" << (training ? "training" : "test") << " accuracy (%)'\n"
         << "set key bottom right noenhanced\n";
  if (last >= budget / 2) {  // the budget's line, when the runs come near it
    script << "set xrange [0:" << std::max(last, budget) * 1.05 << "]\nset arrow from " << budget
           << ", graph 0 to " << budget << ", graph 1 nohead dt 3 lc rgb 'red'\n";
  }
  if (lines == 0)
    script << "set label 'no training accuracy recorded' at graph 0.5, 0.5 center\n"
           << "plot [0:1] [0:1] NaN notitle\n";
  script << plot.str() << "\n";
  course::run_gnuplot(script.str());
}

}  // namespace

RaceEntry read_entry(const std::string& path) {
  std::ifstream in(path);
  COURSE_CHECK(in.is_open(), "cannot read ", path);
  RaceEntry entry{.name = std::filesystem::path(path).stem().string()};
  std::map<int64_t, EntryEpoch> epochs;  // a resumed run's repeated epoch: the last one
  bool header = false;
  int line_number = 0;
  for (std::string text; std::getline(in, text);) {
    ++line_number;
    if (text.empty()) continue;
    try {
      const nlohmann::json line = nlohmann::json::parse(text);
      if (line.contains("recipe")) {
        read_header(line, entry);
        header = true;
      } else {
        const EntryEpoch e = read_epoch(line);
        epochs[e.epoch] = e;
      }
    } catch (const nlohmann::json::exception& error) {
      throw course::Error(course::detail::concat(path, ":", line_number,
                                                 ": not a race metrics line (", error.what(), ")"));
    }
  }
  COURSE_CHECK(header, path, " has no race recipe line: was it written by //day3_data:race?");
  for (const auto& [epoch, e] : epochs) entry.history.push_back(e);
  return entry;
}

std::vector<RaceEntry> read_entries(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  COURSE_CHECK(fs::is_directory(folder, error), "the runs folder ", folder, " does not exist");
  std::vector<std::string> paths;
  for (const fs::directory_entry& file : fs::directory_iterator(folder)) {
    if (file.path().extension() == ".jsonl") paths.push_back(file.path().string());
  }
  std::sort(paths.begin(), paths.end());
  COURSE_CHECK(!paths.empty(), "no entry's metrics (*.jsonl) in ", folder);
  std::vector<RaceEntry> entries;
  for (const std::string& path : paths) entries.push_back(read_entry(path));
  return entries;
}

std::vector<BoardRow> rank_entries(const std::vector<RaceEntry>& entries) {
  std::vector<BoardRow> rows;
  for (const RaceEntry& entry : entries) {
    BoardRow row{.entry = &entry};
    for (const EntryEpoch& e : entry.history) {
      row.images_per_second += e.images_per_second / static_cast<double>(entry.history.size());
      if (within_budget(entry, e) && (!row.best || e.test_accuracy > row.best->test_accuracy)) {
        row.best = e;
      }
    }
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const BoardRow& a, const BoardRow& b) {
    if (a.best.has_value() != b.best.has_value()) return a.best.has_value();
    return a.best && a.best->test_accuracy > b.best->test_accuracy;
  });
  return rows;
}

std::string board_markdown(const std::vector<BoardRow>& rows) {
  std::ostringstream table;
  table << "| rank |";
  for (const std::string& name : column_names()) table << " " << name << " |";
  table << "\n| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
           "---: | ---: |\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    table << "| " << (rows[i].best ? std::to_string(i + 1) : "-") << " |";
    for (const std::string& cell : row_cells(rows[i])) table << " " << cell << " |";
    table << "\n";
  }
  return table.str();
}

std::string board_csv(const std::vector<BoardRow>& rows) {
  std::ostringstream csv;
  csv << "name,model,optimizer,batch,image_size,lr,wd,best_top1,time_to_best_s,epochs,"
         "images_per_s,energy_to_best_kj,core_hours_to_best\n";
  for (const BoardRow& row : rows) {
    const std::vector<std::string> cells = row_cells(row);
    for (size_t i = 0; i < cells.size(); ++i) csv << (i ? "," : "") << cells[i];
    csv << "\n";
  }
  return csv.str();
}

std::string board_html(const std::vector<BoardRow>& rows, const std::string& title) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
       << html_escaped(title) << "</title>\n<style>\n"
       << "body { font-family: sans-serif; margin: 2em; }\n"
       << "table { border-collapse: collapse; }\n"
       << "th, td { border: 1px solid #999; padding: 0.3em 0.8em; text-align: right; }\n"
       << "td:nth-child(2), td:nth-child(3), td:nth-child(4) { text-align: left; }\n"
       << "tr.reference { font-style: italic; background: #eee; }\n"
       << "img { max-width: 48%; }\n</style>\n</head>\n<body>\n<h1>" << html_escaped(title)
       << "</h1>\n<table id=\"leaderboard\">\n<tr><th>rank</th>";
  for (const std::string& name : column_names()) page << "<th>" << html_escaped(name) << "</th>";
  page << "</tr>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const bool reference = rows[i].entry->name == kReferenceEntry;
    page << "<tr" << (reference ? " class=\"reference\"" : "") << "><td>"
         << (rows[i].best ? std::to_string(i + 1) : "-") << "</td>";
    for (const std::string& cell : row_cells(rows[i])) {
      page << "<td>" << html_escaped(cell) << "</td>";
    }
    page << "</tr>\n";
  }
  page << "</table>\n<p>Best test accuracy within the budget; time to best from the start of "
          "the run, validation included.</p>\n"
       << "<img src=\"validation.png\" alt=\"validation accuracy against time\">\n"
       << "<img src=\"training.png\" alt=\"training accuracy against time\">\n</body>\n</html>\n";
  return page.str();
}

void write_board(const std::vector<RaceEntry>& entries, const std::string& folder,
                 const std::string& title) {
  const std::vector<BoardRow> rows = rank_entries(entries);
  for (const auto& [name, text] :
       {std::pair{"board.md", board_markdown(rows)}, std::pair{"board.csv", board_csv(rows)},
        std::pair{"index.html", board_html(rows, title)}}) {
    std::ofstream out(folder + "/" + name);
    out << text;
    COURSE_CHECK(out.good(), "cannot write ", folder, "/", name);
  }
  plot_accuracy(entries, false, folder + "/validation.png");
  plot_accuracy(entries, true, folder + "/training.png");
}

}  // namespace day3
