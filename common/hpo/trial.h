// A trial of a study as the samplers and pruners see it: its parameters, the values it
// reported along the way (one per step: an epoch of a training run), its final value, and the
// rungs of successive halving it has been promoted past.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/hpo/search_space.h"

namespace course::hpo {

enum class TrialState { kRunning, kComplete, kPruned, kFail };
enum class Direction { kMinimize, kMaximize };

const char* to_string(TrialState state);
TrialState parse_trial_state(const std::string& text);
const char* to_string(Direction direction);
Direction parse_direction(const std::string& text);

struct Trial {
  int64_t id = 0;  // the storage's key
  int number = 0;  // 0, 1, 2, ... within its study, in the order trials started
  TrialState state = TrialState::kRunning;
  ParamValues params;
  std::map<int, double> intermediate;  // step -> value reported at that step
  std::optional<double> value;         // the final value of a complete trial
  std::map<int, double> rungs;         // rung -> the value recorded when it reached it
  std::string worker;                  // who ran it (host:pid)
  double started = 0;                  // seconds since the epoch
  std::optional<double> finished;

  std::optional<int> last_step() const;
};

// True when a is better than b in this direction (strictly).
bool better(Direction direction, double a, double b);

}  // namespace course::hpo
