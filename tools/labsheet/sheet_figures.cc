// Reading, comparing and rewriting the sheets' measured figures (sheet_figures.h).
#include "tools/labsheet/sheet_figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "common/core/error.h"
#include "common/core/text.h"

namespace course::labsheet {

namespace {

// key="value" pairs and bare words of a marker.
std::map<std::string, std::string> attributes(const std::string& marker, const std::string& where) {
  static const std::regex attribute(R"re(([a-z]+)(="([^"]*)")?)re");
  std::map<std::string, std::string> found;
  for (auto it = std::sregex_iterator(marker.begin(), marker.end(), attribute);
       it != std::sregex_iterator(); ++it) {
    found[(*it)[1]] = (*it)[2].matched ? (*it)[3].str() : "yes";
  }
  for (const char* required : {"command", "table"}) {
    COURSE_CHECK(found.count(required) > 0, where, ": the figure marker has no ", required,
                 "=\"...\"");
  }
  return found;
}

double number_attribute(const std::map<std::string, std::string>& a, const std::string& key,
                        double otherwise, const std::string& where) {
  const auto it = a.find(key);
  if (it == a.end()) return otherwise;
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    COURSE_FAIL(where, ": ", key, "=\"", it->second, "\" is not a number");
  }
}

// The cells of a markdown table row.
std::vector<std::string> markdown_cells(const std::string& line) {
  std::string inner = trimmed(line);
  inner = inner.substr(1, inner.size() - (inner.back() == '|' ? 2 : 1));
  std::vector<std::string> cells;
  std::istringstream in(inner);
  for (std::string cell; std::getline(in, cell, '|');) cells.push_back(trimmed(cell));
  return cells;
}

bool is_separator(const std::vector<std::string>& cells) {
  return std::all_of(cells.begin(), cells.end(), [](const std::string& c) {
    return !c.empty() && c.find_first_not_of(":-") == std::string::npos;
  });
}

// Columns separated by two spaces or more, or a markdown table's row.
std::vector<std::string> printed_cells(const std::string& line) {
  static const std::regex gap(" {2,}|\t");
  const std::string t = trimmed(line);
  if (t.empty()) return {};
  if (t.front() == '|') return markdown_cells(t);
  std::vector<std::string> cells;
  for (auto it = std::sregex_token_iterator(t.begin(), t.end(), gap, -1);
       it != std::sregex_token_iterator(); ++it) {
    cells.push_back(trimmed(*it));
  }
  return cells;
}

// A cell's numbers (thousands separators allowed) and its text without them.
struct Reading {
  std::vector<double> numbers;
  std::string text;
};
Reading read_cell(const std::string& cell) {
  static const std::regex number(R"(-?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?)");
  Reading r;
  size_t last = 0;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), number);
       it != std::sregex_iterator(); ++it) {
    std::string digits = it->str();
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    r.numbers.push_back(std::stod(digits));
    r.text += cell.substr(last, it->position() - last) + "#";
    last = it->position() + it->length();
  }
  r.text += cell.substr(last);
  r.text.erase(std::remove(r.text.begin(), r.text.end(), ' '), r.text.end());
  return r;
}

// The first cell of the first row whose `column` is below (or above) `threshold`.
std::string first_row(const Table& t, const std::string& claim) {
  std::istringstream in(claim);
  std::string kind, column;
  double threshold = 0;
  in >> kind >> column >> threshold;
  COURSE_CHECK(!in.fail() && (kind == "first-below" || kind == "first-above"), "the claim \"",
               claim, "\" is not \"first-below COLUMN VALUE\" or \"first-above COLUMN VALUE\"");
  const auto at = std::find(t.header.begin(), t.header.end(), column);
  COURSE_CHECK(at != t.header.end(), "the claim's column ", column, " is not in the table");
  const size_t c = at - t.header.begin();
  for (const auto& row : t.rows) {
    const Reading r = read_cell(row.at(c));
    if (r.numbers.empty()) continue;
    if (kind == "first-below" ? r.numbers[0] < threshold : r.numbers[0] > threshold) {
      return row.front();
    }
  }
  return "none";
}

}  // namespace

std::vector<Figure> find_figures(const std::string& sheet, const std::string& text) {
  const std::vector<std::string> lines = text_lines(text);
  std::vector<Figure> figures;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trimmed(lines[i]);
    if (line.rfind("<!-- figure ", 0) != 0) continue;
    const std::string where = sheet + ":" + std::to_string(i + 1);
    COURSE_CHECK(line.size() > 3 && line.compare(line.size() - 3, 3, "-->") == 0, where,
                 ": a figure marker is one line ending in -->");
    const auto a = attributes(line.substr(12, line.size() - 15), where);
    Figure f;
    f.sheet = sheet;
    f.open_line = i;
    f.command = a.at("command");
    f.table_start = a.at("table");
    f.computed = a.count("computed") > 0;
    f.gpu = a.count("gpu") > 0;
    f.tolerance = number_attribute(a, "tolerance", f.computed ? 0 : f.tolerance, where);
    f.absolute = number_attribute(a, "absolute", f.absolute, where);
    f.claim = a.count("claim") ? a.at("claim") : "";
    f.cheap = a.count("cheap") > 0;
    size_t j = i + 1;
    for (; j < lines.size() && trimmed(lines[j]) != "<!-- /figure -->"; ++j) {
      COURSE_CHECK(trimmed(lines[j]).rfind("<!-- figure ", 0) != 0, where,
                   ": the figure has no <!-- /figure --> before the next one");
      const std::string row = trimmed(lines[j]);
      if (row.empty() || row[0] != '|') continue;
      std::vector<std::string> cells = markdown_cells(row);
      if (f.table.header.empty()) {
        f.table.header = std::move(cells);
      } else if (!is_separator(cells)) {
        COURSE_CHECK(cells.size() == f.table.header.size(), sheet, ":", j + 1, ": a row of ",
                     cells.size(), " cells in a table of ", f.table.header.size(), " columns");
        f.table.rows.push_back(std::move(cells));
      }
    }
    COURSE_CHECK(j < lines.size(), where, ": the figure has no <!-- /figure -->");
    f.close_line = j;
    figures.push_back(std::move(f));
    i = j;
  }
  return figures;
}

Table table_from_output(const std::string& output, const std::string& table_start) {
  const std::vector<std::string> lines = text_lines(output);
  const auto header = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return trimmed(l).rfind(table_start, 0) == 0;
  });
  COURSE_CHECK(header != lines.end(), "the output has no table starting with \"", table_start,
               "\"");
  Table t;
  t.header = printed_cells(*header);
  for (auto it = header + 1; it != lines.end(); ++it) {
    std::vector<std::string> cells = printed_cells(*it);
    if (cells.size() != t.header.size()) break;
    if (!is_separator(cells)) t.rows.push_back(std::move(cells));
  }
  COURSE_CHECK(!t.rows.empty(), "the table starting with \"", table_start, "\" has no rows");
  return t;
}

std::string markdown(const Table& t) {
  std::ostringstream out;
  const auto row = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (const std::string& c : cells) out << " " << c << " |";
    out << "\n";
  };
  row(t.header);
  std::vector<std::string> separator;
  for (size_t c = 0; c < t.header.size(); ++c) {
    const bool numeric = std::all_of(t.rows.begin(), t.rows.end(), [&](const auto& r) {
      return read_cell(r[c]).text.rfind("#", 0) == 0;
    });
    separator.push_back(numeric ? "---:" : "---");
  }
  row(separator);
  for (const auto& r : t.rows) row(r);
  return out.str();
}

Comparison compare(const Figure& figure, const Table& measured) {
  Comparison result;
  const Table& sheet = figure.table;
  if (sheet.header.empty()) {
    result.shape_errors.push_back("the sheet has no table here yet (--write adds it)");
    return result;
  }
  if (sheet.header != measured.header) {
    std::ostringstream what;
    what << "the columns changed: the sheet has " << sheet.header.size() << ", the program prints "
         << measured.header.size();
    for (size_t c = 0; c < std::min(sheet.header.size(), measured.header.size()); ++c) {
      if (sheet.header[c] != measured.header[c]) {
        what << " (column " << c + 1 << ": \"" << sheet.header[c] << "\" against \""
             << measured.header[c] << "\")";
        break;
      }
    }
    result.shape_errors.push_back(what.str());
    return result;
  }
  if (sheet.rows.size() != measured.rows.size()) {
    result.shape_errors.push_back("the sheet has " + std::to_string(sheet.rows.size()) +
                                  " rows, the program prints " +
                                  std::to_string(measured.rows.size()));
    return result;
  }
  for (size_t r = 0; r < sheet.rows.size(); ++r) {
    for (size_t c = 0; c < sheet.header.size(); ++c) {
      const Reading was = read_cell(sheet.rows[r][c]), now = read_cell(measured.rows[r][c]);
      if (was.text != now.text || was.numbers.size() != now.numbers.size()) {
        result.shape_errors.push_back("row " + std::to_string(r + 1) + ", " + sheet.header[c] +
                                      ": \"" + sheet.rows[r][c] + "\" is now \"" +
                                      measured.rows[r][c] + "\"");
        continue;
      }
      bool drifted = false;
      for (size_t k = 0; k < was.numbers.size(); ++k) {
        ++result.numbers;
        const double a = was.numbers[k], b = now.numbers[k], gap = std::abs(a - b);
        if (gap > figure.absolute && gap > figure.tolerance * std::max(std::abs(a), std::abs(b))) {
          drifted = true;
        }
      }
      if (drifted) result.drifts.push_back({r, c, sheet.rows[r][c], measured.rows[r][c]});
    }
  }
  if (!figure.claim.empty()) {
    result.claim = ClaimOutcome{figure.claim, first_row(sheet, figure.claim),
                                first_row(measured, figure.claim)};
  }
  return result;
}

std::string replace_figure(const std::string& text, const Figure& figure, const std::string& body) {
  const std::vector<std::string> lines = text_lines(text);
  COURSE_CHECK(figure.close_line < lines.size(), figure.sheet, " changed since it was read");
  std::ostringstream out;
  for (size_t i = 0; i <= figure.open_line; ++i) out << lines[i] << "\n";
  out << body;
  for (size_t i = figure.close_line; i < lines.size(); ++i) out << lines[i] << "\n";
  return out.str();
}

}  // namespace course::labsheet
