// Status check for MPI calls, in the project's one error family (common/core/error.h).
// Communicators that use it set MPI_ERRORS_RETURN so failures reach this check instead of
// aborting the job without a message.
#pragma once

#include <mpi.h>

#include "common/core/error.h"

namespace course::detail {

inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

}  // namespace course::detail

#define MPI_CHECK(call)                                                           \
  do {                                                                            \
    const int course_status = (call);                                             \
    COURSE_CHECK(course_status == MPI_SUCCESS, #call,                             \
                 " failed: ", ::course::detail::mpi_error_string(course_status)); \
  } while (0)
