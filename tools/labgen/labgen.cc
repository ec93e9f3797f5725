// labgen: writes a trainee's exercise file from its solution.
//
//   labgen <day>/README.md-anchor-prefix < solutions/<day>/X.cc > <day>/X.cc
//
// Each region between "// BEGIN EXERCISE TPd.n: <what to do>" and "// END EXERCISE" is
// replaced by a call that fails loudly at run time, naming the exercise and the lab-sheet
// section: course::exercise_todo("TPd.n", "<what to do>", "<day>/README.md#tpdn"). Everything
// else is copied unchanged. Unbalanced or nested markers are an error (exit 1).
#include <iostream>
#include <regex>
#include <string>

namespace {

std::string anchor_of(const std::string& id) {  // "TP1.2" -> "tp12"
  std::string out;
  for (char c : id) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
  }
  return out;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: labgen <lab sheet path, e.g. day1_gpu/README.md> < solution > lab\n";
    return 2;
  }
  const std::string sheet = argv[1];
  const std::regex begin(R"(^(\s*)// BEGIN EXERCISE (TP[0-9]+\.[0-9]+): (.*)$)");
  const std::regex end(R"(^\s*// END EXERCISE\s*$)");
  std::string line, open_id;
  int line_number = 0, open_line = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    std::smatch m;
    if (std::regex_match(line, m, begin)) {
      if (!open_id.empty()) {
        std::cerr << "line " << line_number << ": exercise " << m[2] << " begins inside " << open_id
                  << " (line " << open_line << ")\n";
        return 1;
      }
      open_id = m[2];
      open_line = line_number;
      std::cout << line << "\n"
                << m[1] << "::course::exercise_todo(" << quoted(open_id) << ", " << quoted(m[3])
                << ", " << quoted(sheet + "#" + anchor_of(open_id)) << ");\n";
      continue;
    }
    if (std::regex_match(line, end)) {
      if (open_id.empty()) {
        std::cerr << "line " << line_number << ": END EXERCISE without a BEGIN\n";
        return 1;
      }
      open_id.clear();
      std::cout << line << "\n";
      continue;
    }
    if (open_id.empty()) std::cout << line << "\n";
  }
  if (!open_id.empty()) {
    std::cerr << "exercise " << open_id << " (line " << open_line << ") has no END EXERCISE\n";
    return 1;
  }
  return 0;
}
