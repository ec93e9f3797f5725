// invocation.h's paths.
#include "common/core/invocation.h"

#include <cstdlib>

namespace course {

std::string invocation_path(const std::string& path) {
  const char* start = std::getenv("BUILD_WORKING_DIRECTORY");
  if (start == nullptr || path.empty() || path.front() == '/') return path;
  return std::string(start) + "/" + path;
}

}  // namespace course
