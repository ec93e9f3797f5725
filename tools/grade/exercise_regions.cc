// Reading and rewriting the exercises of a trainee's file (exercise_regions.h).
#include "tools/grade/exercise_regions.h"

#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>

#include "common/core/error.h"
#include "common/core/text.h"

namespace course::grade {

namespace {

const std::regex kBegin(R"(^\s*// BEGIN EXERCISE (TP\d+\.\d+):?\s*(.*)$)");
const std::regex kEnd(R"(^\s*// END EXERCISE\s*$)");

}  // namespace

bool ExerciseRegion::is_stub() const { return !sheet_anchor().empty(); }

std::string ExerciseRegion::sheet_anchor() const {
  std::string joined;
  for (const std::string& line : body) joined += line + "\n";
  // exercise_todo("TPd.n", "what to do", "dayN/README.md#tpdn"); string literals may hold ';'.
  const std::string literal = R"re("(?:[^"\\]|\\.)*")re";
  const std::regex stub(R"re((?:::)?(?:course::)?exercise_todo\(\s*")re" +
                        std::regex_replace(id, std::regex("\\."), "\\.") + R"re("\s*,\s*)re" +
                        literal + R"re(\s*,\s*"([^"]+#[^"]+)"\s*\)\s*;)re");
  std::smatch found;
  if (!std::regex_search(joined, found, stub)) return "";
  // Only the stub: nothing else in the body but comments and blank lines.
  const std::string rest = found.prefix().str() + found.suffix().str();
  std::istringstream in(rest);
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 2, "//") != 0) return "";
  }
  return found[1];
}

std::vector<ExerciseRegion> exercise_regions(const std::string& file, const std::string& text) {
  const std::vector<std::string> lines = text_lines(text);
  std::vector<ExerciseRegion> regions;
  std::optional<ExerciseRegion> open;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    const int line = static_cast<int>(i) + 1;
    if (std::regex_match(lines[i], m, kBegin)) {
      COURSE_CHECK(!open, file, ":", line, ": exercise ", m[1].str(), " begins inside ",
                   open ? open->id : "", ", which has no END EXERCISE");
      open = ExerciseRegion{m[1], m[2], line, 0, {}};
    } else if (std::regex_match(lines[i], kEnd)) {
      COURSE_CHECK(open.has_value(), file, ":", line, ": END EXERCISE without its BEGIN");
      open->end_line = line;
      regions.push_back(std::move(*open));
      open.reset();
    } else if (open) {
      open->body.push_back(lines[i]);
    }
  }
  COURSE_CHECK(!open, file, ":", open ? open->begin_line : 0, ": exercise ", open ? open->id : "",
               " has no END EXERCISE");
  return regions;
}

const ExerciseRegion* region_at_line(const std::vector<ExerciseRegion>& regions, int line) {
  for (const ExerciseRegion& r : regions) {
    if (line > r.begin_line && line < r.end_line) return &r;
  }
  return nullptr;
}

std::string with_body(const std::string& text, const std::string& id,
                      const std::vector<std::string>& body) {
  const std::vector<std::string> lines = text_lines(text);
  const std::vector<ExerciseRegion> regions = exercise_regions("the file", text);
  const auto it = std::find_if(regions.begin(), regions.end(),
                               [&](const ExerciseRegion& r) { return r.id == id; });
  COURSE_CHECK(it != regions.end(), "the file has no exercise ", id);
  std::ostringstream out;
  for (int i = 1; i <= static_cast<int>(lines.size()); ++i) {
    if (i == it->begin_line + 1) {
      for (const std::string& b : body) out << b << "\n";
    }
    if (i > it->begin_line && i < it->end_line) continue;
    out << lines[i - 1] << "\n";
  }
  return out.str();
}

}  // namespace course::grade
