// The stub every unfinished exercise of a lab calls (tools/labgen writes the calls).
#pragma once

#include <string>

#include "common/core/error.h"

namespace course {

// Thrown by an exercise the trainee has not written yet; the lab prints it and exits non-zero.
class ExerciseNotDone : public Error {
 public:
  using Error::Error;
};

[[noreturn]] inline void exercise_todo(const std::string& id, const std::string& what,
                                       const std::string& sheet) {
  throw ExerciseNotDone("TODO " + id + ": " + what + " (exercise not written yet; see " + sheet +
                        ")");
}

}  // namespace course
