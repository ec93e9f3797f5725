// What the grader asks of the system: shell commands run with a time limit (in their own
// process group, so that a limit reached kills everything they started, mpirun and its ranks,
// with their output kept), words quoted for the shell, and whole files read and written.
#pragma once

#include <filesystem>
#include <string>

namespace course::grade {

struct TimedRun {
  std::string output;
  int status = 0;  // the exit status (128 + the signal for a killed one)
  bool timed_out = false;
};

TimedRun run_with_limit(const std::string& shell_command, double seconds);

// `word` as one shell word ('...').
std::string shell_quoted(const std::string& word);

std::string read_text(const std::filesystem::path& path);
// Creates the folders above `path` first.
void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace course::grade
