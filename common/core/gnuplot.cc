// gnuplot through a pipe (see gnuplot.h).
#include "common/core/gnuplot.h"

#include <cstdio>

#include "common/core/error.h"

namespace course {

void run_gnuplot(const std::string& script, int width, int height) {
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  COURSE_CHECK(gnuplot, "cannot start gnuplot");
  std::fprintf(gnuplot, "set terminal pngcairo size %d,%d\nset grid\nset datafile missing 'nan'\n",
               width, height);
  std::fputs(script.c_str(), gnuplot);
  const int status = pclose(gnuplot);
  COURSE_CHECK(status == 0, "gnuplot failed (exit status ", status,
               "): the plots need gnuplot (./setup.sh installs gnuplot-nox)");
}

}  // namespace course
