// Every rank's text on every rank (collective): how per-rank reports, such as each rank's
// profiler events, come together in one file.
#pragma once

#include <string>
#include <vector>

#include "common/parallel/comm/communicator.h"

namespace course::parallel {

// Element r is rank r's `mine`.
std::vector<std::string> all_gather_strings(const std::string& mine, Communicator& comm);

}  // namespace course::parallel
