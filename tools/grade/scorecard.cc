// A class's scorecard as a terminal table, a CSV and an HTML page (scorecard.h).
#include "tools/grade/scorecard.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "common/core/error.h"
#include "common/core/text.h"

namespace course::grade {

namespace {

const std::vector<Verdict> kVerdicts = {
    Verdict::kPassed,        Verdict::kFailed,       Verdict::kCrashed, Verdict::kTimedOut,
    Verdict::kDidNotCompile, Verdict::kNotAttempted, Verdict::kRefused};

constexpr const char* kCsvHeader = "trainee,exercise,verdict,message,log,seconds,note,hand_in";

Verdict verdict_named(const std::string& name) {
  for (const Verdict v : kVerdicts) {
    if (verdict_name(v) == name) return v;
  }
  COURSE_FAIL("\"", name, "\" is not a verdict");
}

std::string short_cell(Verdict v) {
  switch (v) {
    case Verdict::kPassed:
      return "ok";
    case Verdict::kFailed:
      return "FAIL";
    case Verdict::kCrashed:
      return "CRASH";
    case Verdict::kTimedOut:
      return "TIME";
    case Verdict::kDidNotCompile:
      return "COMPILE";
    case Verdict::kNotAttempted:
      return "todo";
    case Verdict::kRefused:
      return "REFUSED";
  }
  return "?";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (const char c : s) {
    if (c == '"') quoted += '"';
    quoted += c == '\n' ? ' ' : c;
  }
  return quoted + "\"";
}

// The fields of one CSV line (quotes as csv_field writes them).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << seconds;
  return text.str();
}

double seconds_named(const std::string& text) {
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  COURSE_CHECK(!text.empty() && *end == '\0' && seconds >= 0, "\"", text,
               "\" is not a cell's seconds");
  return seconds;
}

const ExerciseResult* result_of(const TraineeScore& t, const std::string& id) {
  const auto it = t.results.find(id);
  return it == t.results.end() ? nullptr : &it->second;
}

std::string totals_text(const Scorecard& card, const std::string& id,
                        const std::string& between = "/") {
  const ExerciseTotals t = totals_of(card, id);
  return std::to_string(t.passed) + between + std::to_string(t.attempted) + between +
         std::to_string(t.trainees);
}

constexpr const char* kPageStyle =
    "body { font-family: sans-serif; margin: 2em; }\n"
    "table { border-collapse: collapse; }\n"
    "th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: center; }\n"
    "td.trainee { text-align: left; } tr.totals { font-weight: bold; }\n"
    "div.message, div.note, div.time { font-size: 0.8em; max-width: 22em; text-align: left; }\n"
    "td.passed { background: #c8f0c8; } td.failed { background: #f4b8b8; }\n"
    "td.crashed { background: #e88a8a; }\n"
    "td.timed-out { background: #f6d58e; } td.did-not-compile { background: #e0b0e8; }\n"
    "td.not-attempted { background: #eeeeee; } td.refused { background: #9a9a9a; }\n";

// A result's cell: its verdict (linking to its log), its message and its time.
std::string html_cell(const ExerciseResult& r) {
  std::string kind = verdict_name(r.verdict);
  std::replace(kind.begin(), kind.end(), ' ', '-');
  const std::string text = html_escaped(verdict_name(r.verdict));
  return "<td class=\"" + kind + "\">" +
         (r.log.empty() ? text : "<a href=\"" + html_escaped(r.log) + "\">" + text + "</a>") +
         (r.message.empty() ? "" : "<div class=\"message\">" + html_escaped(r.message) + "</div>") +
         (r.seconds > 0 ? "<div class=\"time\">" + seconds_text(r.seconds) + " s</div>" : "") +
         "</td>";
}

}  // namespace

ExerciseTotals totals_of(const Scorecard& card, const std::string& id) {
  ExerciseTotals totals;
  totals.trainees = static_cast<int>(card.trainees.size());
  for (const TraineeScore& t : card.trainees) {
    const ExerciseResult* r = result_of(t, id);
    if (r == nullptr || r->verdict == Verdict::kNotAttempted || r->verdict == Verdict::kRefused) {
      continue;
    }
    ++totals.attempted;
    totals.passed += r->verdict == Verdict::kPassed;
  }
  return totals;
}

std::string scorecard_csv(const Scorecard& card) {
  std::ostringstream out;
  out << kCsvHeader << "\n";
  for (const TraineeScore& t : card.trainees) {
    for (const std::string& id : card.exercises) {
      const ExerciseResult* r = result_of(t, id);
      if (r == nullptr) continue;
      out << csv_field(t.name) << "," << id << "," << verdict_name(r->verdict) << ","
          << csv_field(r->message) << "," << csv_field(r->log) << "," << seconds_text(r->seconds)
          << "," << csv_field(t.note) << "," << csv_field(t.hand_in) << "\n";
    }
  }
  return out.str();
}

std::vector<TraineeScore> trainees_from_csv(const std::string& csv) {
  std::vector<TraineeScore> trainees;
  std::istringstream in(csv);
  std::string line;
  COURSE_CHECK(std::getline(in, line) && line == kCsvHeader,
               "not a scorecard CSV: its first line is \"", line, "\"");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    COURSE_CHECK(f.size() == 8, "a scorecard line of ", f.size(), " fields: ", line);
    if (trainees.empty() || trainees.back().name != f[0])
      trainees.push_back({f[0], {}, f[6], f[7]});
    trainees.back().results[f[1]] = {verdict_named(f[2]), f[3], f[4], seconds_named(f[5])};
  }
  return trainees;
}

std::string scorecard_table(const Scorecard& card) {
  size_t name_width = 7;
  for (const TraineeScore& t : card.trainees) name_width = std::max(name_width, t.name.size());
  std::ostringstream out;
  out << card.day << ", graded against " << card.course << "\n\n";
  out << std::left << std::setw(static_cast<int>(name_width)) << "trainee";
  for (const std::string& id : card.exercises) out << "  " << std::setw(7) << id;
  out << "  passed\n";
  for (const TraineeScore& t : card.trainees) {
    out << std::setw(static_cast<int>(name_width)) << t.name;
    int passed = 0;
    for (const std::string& id : card.exercises) {
      const ExerciseResult* r = result_of(t, id);
      out << "  " << std::setw(7) << (r ? short_cell(r->verdict) : "-");
      if (r && r->verdict == Verdict::kPassed) ++passed;
    }
    out << "  " << passed << "/" << card.exercises.size() << "\n";
  }
  out << std::setw(static_cast<int>(name_width)) << "class";
  for (const std::string& id : card.exercises) out << "  " << std::setw(7) << totals_text(card, id);
  out << "\n\nok passed, FAIL failed, CRASH crashed, TIME timed out, COMPILE did not compile, todo "
         "not attempted (still the stub), REFUSED not graded (the reason below); class: passed/"
         "attempted/trainees\n";
  for (const TraineeScore& t : card.trainees) {
    if (!t.note.empty()) out << t.name << " note: " << t.note << "\n";
    for (const std::string& id : card.exercises) {
      const ExerciseResult* r = result_of(t, id);
      if (r == nullptr || r->verdict == Verdict::kPassed || r->verdict == Verdict::kNotAttempted) {
        continue;
      }
      if (r->verdict == Verdict::kRefused) {  // the whole hand-in, once
        out << t.name << " refused: " << r->message << "\n";
        break;
      }
      out << t.name << " " << id << " " << verdict_name(r->verdict) << ": " << r->message << "\n";
    }
  }
  return out.str();
}

std::string scorecard_html(const Scorecard& card, const std::string& title) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escaped(title)
      << "</title>\n<style>\n"
      << kPageStyle << "</style></head>\n<body>\n<h1>" << html_escaped(title)
      << "</h1>\n<p>Graded against " << html_escaped(card.course)
      << ".</p>\n<table>\n<tr><th>trainee</th>";
  for (const std::string& id : card.exercises) out << "<th>" << id << "</th>";
  out << "<th>passed</th></tr>\n";
  for (const TraineeScore& t : card.trainees) {
    out << "<tr><td class=\"trainee\">" << html_escaped(t.name)
        << (t.hand_in.empty() ? "" : "<div class=\"note\">" + html_escaped(t.hand_in) + "</div>")
        << (t.note.empty() ? "" : "<div class=\"note\">" + html_escaped(t.note) + "</div>")
        << "</td>";
    int passed = 0;
    for (const std::string& id : card.exercises) {
      const ExerciseResult* r = result_of(t, id);
      out << (r ? html_cell(*r) : "<td></td>");
      passed += r && r->verdict == Verdict::kPassed;
    }
    out << "<td>" << passed << "/" << card.exercises.size() << "</td></tr>\n";
  }
  out << "<tr class=\"totals\"><td class=\"trainee\">the class: passed / attempted / trainees</td>";
  for (const std::string& id : card.exercises) {
    out << "<td>" << totals_text(card, id, " / ") << "</td>";
  }
  out << "<td></td></tr>\n</table>\n</body></html>\n";
  return out.str();
}

}  // namespace course::grade
