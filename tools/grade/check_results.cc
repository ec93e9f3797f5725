// The checks' suites and output, read per exercise (check_results.h).
#include "tools/grade/check_results.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>
#include <sstream>

#include "common/core/text.h"

namespace course::grade {

namespace {

// The first failure the console shows: where, then the assertion's own lines up to the blank
// line, gtest's next marker or another rank's output; else a rank's abort line.
std::string console_failure(const std::vector<std::string>& lines) {
  static const std::regex failure(R"(^(.*?)(?::(\d+))?: Failure$)");  // "unknown file: Failure" too
  static const std::regex aborted(R"(^rank \d+ failed .*; aborting every rank of the job$)");
  std::string first_abort;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, failure)) {
      const std::string file = m[1];
      std::string where =
          file.substr(file.rfind('/') + 1) + (m[2].matched ? ":" + m[2].str() : "") + ":";
      for (size_t j = i + 1; j < lines.size() && j < i + 8; ++j) {
        const std::string t = trimmed(lines[j]);
        if (t.empty() || t[0] == '[' || t.rfind("Note: ", 0) == 0 ||
            std::regex_match(lines[j], failure) || std::regex_match(lines[j], aborted)) {
          break;
        }
        where += " " + t;
      }
      return where;
    }
    if (first_abort.empty() && std::regex_match(lines[i], aborted)) first_abort = lines[i];
  }
  return first_abort;
}

// The output's last line that says something (mpirun's rules of dashes do not).
std::string last_line(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (std::any_of(it->begin(), it->end(), [](unsigned char c) { return std::isalnum(c); })) {
      return trimmed(*it);
    }
  }
  return "";
}

// An attribute's value in XML text, its entities replaced and its lines joined.
std::string xml_attribute_text(const std::string& escaped) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&quot;", "\""}, {"&apos;", "'"}, {"&lt;", "<"},   {"&gt;", ">"},
      {"&#x0A;", " "},  {"&#x0D;", ""},  {"&#x09;", " "}, {"&amp;", "&"}};
  std::string text = escaped;
  for (const auto& [entity, character] : kEntities) {
    for (size_t at = 0; (at = text.find(entity, at)) != std::string::npos;) {
      text.replace(at, std::strlen(entity), character);
      at += std::strlen(character);
    }
  }
  return trimmed(text);
}

int count_of(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++count;
  return count;
}

}  // namespace

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
    case Verdict::kCrashed:
      return "crashed";
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

GtestReport read_gtest_report(const std::string& xml) {
  static const std::regex root(
      R"re(<testsuites [^>]*failures="(\d{1,9})"[^>]*errors="(\d{1,9})")re");
  static const std::regex failure(R"re(<failure message="([^"]*)")re");
  GtestReport report;
  std::smatch m;
  if (!std::regex_search(xml, m, root)) return report;  // not gtest's: nothing completed
  report.failed = std::stoi(m[1]) + std::stoi(m[2]);
  report.completed = count_of(xml, "result=\"completed\"");
  if (std::regex_search(xml, m, failure)) report.first_failure = xml_attribute_text(m[1]);
  return report;
}

ExerciseResult read_check_run(const std::string& output, int exit_status,
                              const std::vector<GtestReport>& reports, size_t processes) {
  int completed = 0, failed = 0;
  std::string report_failure;
  for (const GtestReport& r : reports) {
    completed += r.completed;
    failed += r.failed;
    if (report_failure.empty()) report_failure = r.first_failure;
  }
  if (exit_status == 0 && reports.size() == processes && completed > 0 && failed == 0) {
    return {Verdict::kPassed, "", ""};
  }
  const std::vector<std::string> lines = text_lines(output);
  if (exit_status > 128 && exit_status < 128 + 65) {
    const int signal = exit_status - 128;
    const std::string last = last_line(lines);
    return {Verdict::kCrashed,
            "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")" +
                (last.empty() ? "" : ": " + last),
            ""};
  }
  std::string message = console_failure(lines);
  if (message.empty()) message = report_failure;
  if (!message.empty()) return {Verdict::kFailed, message, ""};
  if (exit_status != 0) {
    const std::string last = last_line(lines);
    return {Verdict::kFailed,
            "exit " + std::to_string(exit_status) + (last.empty() ? "" : ": " + last), ""};
  }
  if (reports.size() < processes) {
    return {Verdict::kFailed,
            std::to_string(processes - reports.size()) + " of " + std::to_string(processes) +
                " processes wrote no test report",
            ""};
  }
  return {Verdict::kFailed, failed > 0 ? "a test failed" : "no test of the exercise ran", ""};
}

}  // namespace course::grade
