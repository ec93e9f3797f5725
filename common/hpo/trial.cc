// Names of trial states and directions, as stored and printed.
#include "common/hpo/trial.h"

#include "common/core/error.h"

namespace course::hpo {

const char* to_string(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return "running";
    case TrialState::kComplete:
      return "complete";
    case TrialState::kPruned:
      return "pruned";
    case TrialState::kFail:
      return "failed";
  }
  return "?";
}

TrialState parse_trial_state(const std::string& text) {
  for (TrialState state :
       {TrialState::kRunning, TrialState::kComplete, TrialState::kPruned, TrialState::kFail}) {
    if (text == to_string(state)) return state;
  }
  COURSE_FAIL("unknown trial state '", text, "'");
}

const char* to_string(Direction direction) {
  return direction == Direction::kMinimize ? "minimize" : "maximize";
}

Direction parse_direction(const std::string& text) {
  if (text == "minimize") return Direction::kMinimize;
  if (text == "maximize") return Direction::kMaximize;
  COURSE_FAIL("unknown direction '", text, "' (minimize or maximize)");
}

std::optional<int> Trial::last_step() const {
  if (intermediate.empty()) return std::nullopt;
  return intermediate.rbegin()->first;
}

bool better(Direction direction, double a, double b) {
  return direction == Direction::kMinimize ? a < b : a > b;
}

}  // namespace course::hpo
