// The project's one error type and its checking macros.
//
// Every failure a user can cause (bad flags, shapes, dtypes, devices, files, allocation sizes)
// throws course::Error with a message naming the file and line of the check; programs catch it
// in main and exit non-zero with that one message. Library status codes (CUDA, cuBLAS, cuDNN,
// NCCL, MPI) go through the same path via the *_CHECK macros in their own headers.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace course {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a device allocator cannot satisfy a request; the labs report it as "OOM".
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

namespace detail {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

[[noreturn]] inline void fail_at(const char* file, int line, const std::string& message) {
  throw Error(concat(message, " [", file, ":", line, "]"));
}

}  // namespace detail
}  // namespace course

// COURSE_CHECK(cond, parts...): throws course::Error("parts..." + location) when cond is false.
#define COURSE_CHECK(cond, ...)                                                             \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::course::detail::fail_at(__FILE__, __LINE__, ::course::detail::concat(__VA_ARGS__)); \
  } while (0)

// COURSE_FAIL(parts...): throws unconditionally.
#define COURSE_FAIL(...) \
  ::course::detail::fail_at(__FILE__, __LINE__, ::course::detail::concat(__VA_ARGS__))
