// The checks' suites and output, read per exercise (check_results.h).
#include "tools/grade/check_results.h"

#include <regex>
#include <sstream>

#include "common/core/text.h"

namespace course::grade {

namespace {}  // namespace

std::vector<std::string> exercises_of_suite(const std::string& suite) {
  static const std::regex named(R"(^TP(\d+)_(\d+)(?:_(\d+))?)");
  const std::string name =
      suite.substr(suite.rfind('/') == std::string::npos ? 0 : suite.rfind('/') + 1);
  std::smatch m;
  if (!std::regex_search(name, m, named)) return {};
  const int first = std::stoi(m[2]), last = m[3].matched ? std::stoi(m[3]) : first;
  std::vector<std::string> ids;
  for (int n = first; n <= last; ++n) ids.push_back("TP" + m[1].str() + "." + std::to_string(n));
  return ids;
}

std::map<std::string, std::string> exercise_filters(const std::string& listed_tests) {
  std::map<std::string, std::string> filters;
  for (const std::string& line : text_lines(listed_tests)) {
    // Suites are the unindented lines ending in '.', tests the indented ones.
    if (line.empty() || line[0] == ' ' || line.back() != '.') continue;
    const std::string suite = line.substr(0, line.size() - 1);
    for (const std::string& id : exercises_of_suite(suite)) {
      std::string& filter = filters[id];
      filter += (filter.empty() ? "" : ":") + suite + ".*";
    }
  }
  return filters;
}

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPassed:
      return "passed";
    case Verdict::kFailed:
      return "failed";
    case Verdict::kTimedOut:
      return "timed out";
    case Verdict::kDidNotCompile:
      return "did not compile";
    case Verdict::kNotAttempted:
      return "not attempted";
    case Verdict::kRefused:
      return "refused";
  }
  return "?";
}

ExerciseResult read_check_run(const std::string& output, int exit_status) {
  const std::vector<std::string> lines = text_lines(output);
  static const std::regex failure(R"(^(.*?)(?::(\d+))?: Failure$)");  // "unknown file: Failure" too
  static const std::regex aborted(R"(^rank \d+ failed .*; aborting every rank of the job$)");
  int passed = 0;
  std::string first_failure, first_abort;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("[       OK ] ", 0) == 0) ++passed;
    std::smatch m;
    if (first_failure.empty() && std::regex_match(lines[i], m, failure)) {
      // Where, then the assertion's own lines up to the blank line, gtest's next marker or
      // another rank's output.
      const std::string file = m[1];
      first_failure =
          file.substr(file.rfind('/') + 1) + (m[2].matched ? ":" + m[2].str() : "") + ":";
      for (size_t j = i + 1; j < lines.size() && j < i + 8; ++j) {
        const std::string t = trimmed(lines[j]);
        if (t.empty() || t[0] == '[' || t.rfind("Note: ", 0) == 0 ||
            std::regex_match(lines[j], failure) || std::regex_match(lines[j], aborted)) {
          break;
        }
        first_failure += " " + t;
      }
    } else if (first_abort.empty() && std::regex_match(lines[i], aborted)) {
      first_abort = lines[i];
    }
  }
  // The assertion's report where a rank printed it; else the abort's line (its first line).
  if (first_failure.empty()) first_failure = first_abort;
  if (exit_status == 0 && passed > 0 && first_failure.empty()) return {Verdict::kPassed, "", ""};
  if (first_failure.empty()) {
    if (exit_status == 0) return {Verdict::kFailed, "no test of the exercise ran", ""};
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if (!trimmed(*it).empty()) {
        first_failure = trimmed(*it);
        break;
      }
    }
    first_failure =
        "exit " + std::to_string(exit_status) + (first_failure.empty() ? "" : ": " + first_failure);
  }
  return {Verdict::kFailed, first_failure, ""};
}

}  // namespace course::grade
