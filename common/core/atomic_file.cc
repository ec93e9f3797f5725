// atomic_file.h's writes.
#include "common/core/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/core/error.h"

namespace course {

void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& what) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    COURSE_CHECK(out.good(), "cannot write ", what, " ", temp);
    out << text;
    COURSE_CHECK(out.good(), "cannot write ", what, " ", temp);
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  COURSE_CHECK(!error, "cannot move ", what, " into place at ", path, ": ", error.message());
}

}  // namespace course
