// The lab sheets' measured figures, as the figures tool (figures.cc) regenerates them.
//
// A sheet declares each table a program measures between two markers, the command that makes it
// and how to read its output:
//
//   <!-- figure command="mpirun -np 2 bazel-bin/bench/pipeline_bench 4" table="schedule" -->
//   Measured with `mpirun -np 2 bazel-bin/bench/pipeline_bench 4` on 2 cores of ..., 2026-11-29:
//
//   | schedule | m | bubble | ... |
//   | --- | ---: | ---: | ... |
//   | naive | 1 | 0.517 | ... |
//   <!-- /figure -->
//
// `table` is how the program's printed table starts (its header line), whose columns are
// separated by two spaces or more (or a markdown table's bars). Optional attributes: `tolerance`
// (relative, default 0.25) and `absolute` (a difference always accepted, default 0) for the
// numbers, `claim` (a comparison the text draws from the table: "first-below COLUMN VALUE" or
// "first-above COLUMN VALUE", the first row whose COLUMN is below or above VALUE, e.g. where the
// ring starts to beat MPI), `cheap` (fast enough for the test suite's smoke run), `computed` (a
// model's figures, the same on every machine: compared exactly, and a table that moved is a
// failure, not a drift) and `gpu` (measured on a GPU: a machine without one says so and keeps the
// sheet's table).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace course::labsheet {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct Figure {
  std::string sheet;     // the sheet's path, as given
  size_t open_line = 0;  // the marker lines, 0-based
  size_t close_line = 0;
  std::string command;  // as the sheet shows it
  std::string table_start;
  double tolerance = 0.25, absolute = 0;
  std::string claim;  // empty: none
  bool cheap = false;
  bool computed = false;
  bool gpu = false;
  Table table;  // the sheet's table between the markers (empty before the first write)
};

// The figures of a sheet's text; a marker without its close or without `command` and `table`,
// or a table with ragged rows, is an error naming the sheet and line.
std::vector<Figure> find_figures(const std::string& sheet, const std::string& text);

// The table a program printed: the line starting (after spaces) with `table_start` and the
// lines after it with as many columns, up to the first line without.
Table table_from_output(const std::string& output, const std::string& table_start);

// A markdown table; columns whose cells all start with a number are right-aligned.
std::string markdown(const Table& table);

// A cell of the new table that differs from the sheet's beyond the tolerance.
struct Drift {
  size_t row, column;
  std::string sheet, measured;
};

struct ClaimOutcome {
  std::string claim;
  std::string sheet_row, measured_row;  // the first rows' first cells ("none": no row)
  bool changed() const { return sheet_row != measured_row; }
};

struct Comparison {
  std::vector<std::string> shape_errors;  // columns, rows or labels that no longer match
  std::vector<Drift> drifts;
  size_t numbers = 0;  // numbers compared
  std::optional<ClaimOutcome> claim;
};

// The measured table against the sheet's: every cell's numbers within the figure's tolerance and
// its text (what remains without the numbers) equal.
Comparison compare(const Figure& figure, const Table& measured);

// The sheet's text with the figure's lines between its markers replaced by `body`.
std::string replace_figure(const std::string& text, const Figure& figure, const std::string& body);

}  // namespace course::labsheet
