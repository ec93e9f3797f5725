// PNG plots through gnuplot (setup.sh installs gnuplot-nox): the labs and tools write a gnuplot
// script with their data inline (data blocks) and hand it here, so no temporary files are left.
#pragma once

#include <string>

namespace course {

// Runs `script` after a PNG terminal of `width` x `height`, a grid and 'nan' as missing data;
// the script sets its own output file. Throws course::Error when gnuplot is missing or fails.
void run_gnuplot(const std::string& script, int width = 900, int height = 540);

}  // namespace course
