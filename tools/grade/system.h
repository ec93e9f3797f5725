// What the grader asks of the system: shell commands run with a time limit (in their own
// process group, so that a limit reached kills everything they started, mpirun and its ranks,
// with their output kept), a clean stop on a signal, words quoted for the shell, and whole files
// read and written.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace course::grade {

struct TimedRun {
  std::string output;  // bounded: its start and end, a line saying how much between was cut
  int status = 0;      // the exit status (128 + the signal for a killed one)
  bool timed_out = false;
  size_t bytes_cut = 0;  // output left out of `output`
};

// What a run keeps of its output: its first bytes and its last (where a check's verdict and a
// crash's words are), everything printed read (a flooding command never blocks on its pipe).
constexpr size_t kKeptOutputBytes = 4 << 20;

TimedRun run_with_limit(const std::string& shell_command, double seconds,
                        size_t kept_output_bytes = kKeptOutputBytes);

// Ctrl-C, scancel's SIGTERM or a closed terminal's SIGHUP stop grading cleanly: the commands
// run_with_limit is running, in process groups of their own that those signals do not reach,
// are killed with everything they started, the WhenStopped action runs (the work folder's
// removal), and the grader exits with 128 + the signal. Call once, first in main, before any
// other thread starts: the signals are then blocked in every thread but the one that waits for
// them (and unblocked again in the commands).
void stop_cleanly_on_signals();
// What stopping also does while this lives.
class WhenStopped {
 public:
  explicit WhenStopped(std::function<void()> action);
  ~WhenStopped();
  WhenStopped(const WhenStopped&) = delete;
  WhenStopped& operator=(const WhenStopped&) = delete;
};

// The first line of a command's output (a git hash), without its line end.
std::string first_line(const std::string& output);

// `word` as one shell word ('...').
std::string shell_quoted(const std::string& word);

std::string read_text(const std::filesystem::path& path);
// Creates the folders above `path` first.
void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace course::grade
