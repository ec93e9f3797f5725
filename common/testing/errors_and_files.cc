// Test helpers.
#include "common/testing/errors_and_files.h"

#include <cstdlib>
#include <filesystem>

#include "common/core/error.h"

namespace course::testing {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return (dir ? std::string(dir) : std::filesystem::temp_directory_path().string()) + "/" + name;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace course::testing
