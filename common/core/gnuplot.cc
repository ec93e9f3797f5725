// gnuplot through a pipe (see gnuplot.h). Its messages go to a temporary file, read back only
// when it fails; its standard output goes nowhere, so a PNG that could not be written to its
// file never reaches the terminal.
#include "common/core/gnuplot.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/core/error.h"

namespace course {
namespace {

// A temporary file removed when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    const char* folder = std::getenv("TMPDIR");
    path_ = std::string(folder && *folder ? folder : "/tmp") + "/gnuplot-XXXXXX";
    const int fd = mkstemp(path_.data());
    COURSE_CHECK(fd >= 0, "cannot make a temporary file for gnuplot's messages in ", path_);
    close(fd);
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  // The file's lines trimmed, without blank ones and gnuplot's caret under the error, joined.
  std::string text() const {
    std::ifstream in(path_);
    std::string joined, line;
    while (std::getline(in, line)) {
      const size_t first = line.find_first_not_of(" \t"), last = line.find_last_not_of(" \t");
      if (first == std::string::npos || line.substr(first, last + 1 - first) == "^") continue;
      joined += (joined.empty() ? "" : "; ") + line.substr(first, last + 1 - first);
    }
    return joined;
  }

 private:
  std::string path_;
};

}  // namespace

void run_gnuplot(const std::string& script, int width, int height) {
  const TempFile messages;
  const std::string command = "gnuplot >/dev/null 2>'" + messages.path() + "'";
  FILE* gnuplot = popen(command.c_str(), "w");
  COURSE_CHECK(gnuplot, "cannot start gnuplot");
  std::fprintf(gnuplot, "set terminal pngcairo size %d,%d\nset grid\nset datafile missing 'nan'\n",
               width, height);
  std::fputs(script.c_str(), gnuplot);
  const int status = pclose(gnuplot);
  COURSE_CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 127),
               "the plots need gnuplot, which is not installed (./setup.sh installs gnuplot-nox)");
  COURSE_CHECK(status == 0, "gnuplot failed: ", messages.text());
}

}  // namespace course
